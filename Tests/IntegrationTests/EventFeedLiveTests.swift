import Foundation
import Postgres
import Testing

@testable import TransferGateway

/// `GET /v1/events` on a real server, database and S3: the triggers of migration 14 record
/// every change in its transaction, the notification wakes feeds on every instance.
extension JobTableTests {
    @Suite struct EventFeedLiveTests {
        /// A feed reader: an identity of its own (so no other test's events are in its feed), its
        /// token and a small object it may make download jobs of (a download job is complete as
        /// soon as it is created: the cheapest completion there is).
        struct Reader {
            let gateway: LiveGateway
            let identity: String
            let token: String

            static func make(_ setup: JobsLiveSetup, _ name: String, gateway: LiveGateway? = nil) async throws -> Reader {
                let identity = "\(name)-\(UUID().uuidString.lowercased())"
                _ = try await setup.client.putObject(key: "private/\(identity)/src.txt", body: .bytes(Array("feed".utf8)))
                let gateway = gateway ?? setup.gateway
                return Reader(gateway: gateway, identity: identity, token: gateway.token(identity))
            }

            var url: String { "http://127.0.0.1:\(gateway.port)/v1/events" }

            func stream(_ headers: [String] = []) throws -> StreamReader {
                try StreamReader(url, headers: ["Authorization: Bearer \(token)"] + headers)
            }

            /// A download job of its object; answers the job's id.
            func completeAJob(on other: LiveGateway? = nil) async throws -> String {
                let created = try await (other ?? gateway).request(
                    "POST", "/v1/jobs", token: token,
                    json: ["type": "download", "source": ["accessLevel": "private", "key": "src.txt"]])
                #expect(created.status == 201 && created.json["state"] as? String == "completed", "\(created.json)")
                return try #require(created.json["id"] as? String)
            }

            func page(_ query: String) async throws -> LiveGateway.Answer {
                try await gateway.request("GET", "/v1/events\(query)", token: token, headers: ["Accept": "application/json"])
            }
        }

        static func start() async throws -> JobsLiveSetup {
            try await JobsLiveSetup.start(folderPrefix: "feed") { $0.userRate = 1000 }
        }

        /// One feed hears all 50 completions; after a disconnect, `Last-Event-ID` brings exactly
        /// the 10 completions it missed, in order; another identity's feed hears none of it.
        @Test func oneFeedHearsEveryCompletionAndLastEventIDReplaysWhatItMissed() async throws {
            let setup = try await Self.start()
            let alice = try await Reader.make(setup, "feed-alice")
            let bob = try await Reader.make(setup, "feed-bob")
            let feed = try alice.stream()
            let other = try bob.stream()
            try await feed.until("the feed to open") { feed.text.contains("retry: 2000") }
            try await other.until("the other feed to open") { other.text.contains("retry: 2000") }
            #expect(feed.responseHead.lowercased().contains("content-type: text/event-stream"))
            let first = try await withThrowingTaskGroup(of: [String].self) { group in
                for _ in 0..<5 {
                    group.addTask {
                        var ids: [String] = []
                        for _ in 0..<10 { ids.append(try await alice.completeAJob()) }
                        return ids
                    }
                }
                return try await group.reduce(into: [String]()) { $0 += $1 }
            }
            #expect(first.count == 50)
            try await feed.until("50 completions", timeout: 60) { Self.completions(feed).count == 50 }
            #expect(Set(Self.completions(feed).map(\.job)) == Set(first))
            let numbers = feed.ids.compactMap(Int.init)
            #expect(numbers == Array(1...100), "every creation and completion, numbered without a gap: \(numbers)")
            feed.stop()
            let seen = try #require(numbers.last)

            var missed: [String] = []
            for _ in 0..<10 { missed.append(try await alice.completeAJob()) }
            let resumed = try alice.stream(["Last-Event-ID: \(seen)"])
            try await resumed.until("the 10 missed completions", timeout: 30) { Self.completions(resumed).count == 10 }
            try await Task.sleep(for: .milliseconds(300))
            #expect(Self.completions(resumed).map(\.job) == missed, "exactly the missed completions, in order")
            #expect(resumed.ids.compactMap(Int.init) == Array((seen + 1)...(seen + 20)))
            resumed.stop()

            other.stop()
            #expect(!other.text.contains("event:"), "another identity's feed heard: \(other.text.prefix(500))")
            let bobsPage = try await bob.page("?since=0")
            #expect((bobsPage.json["events"] as? [Any])?.isEmpty == true && bobsPage.json["cursor"] as? String == "0")
            await setup.stop()
        }

        /// A change made through a second instance reaches a feed held on the first, woken by the
        /// notification (well before the 15 s heartbeat would have looked again).
        @Test func aChangeOnAnotherInstanceReachesTheFeed() async throws {
            let setup = try await Self.start()
            let second = try LiveGateway { $0.userRate = 1000 }
            let carol = try await Reader.make(setup, "feed-carol")
            let feed = try carol.stream()
            try await feed.until("the feed to open") { feed.text.contains("retry: 2000") }
            try await Task.sleep(for: .milliseconds(200))
            let started = Date()
            let id = try await carol.completeAJob(on: second)
            try await feed.until("the completion made on the other instance", timeout: 10) { !Self.completions(feed).isEmpty }
            #expect(Date().timeIntervalSince(started) < 5)
            #expect(Self.completions(feed).map(\.job) == [id])
            feed.stop()
            await second.stop()
            await setup.stop()
        }

        /// JSON polling: `since=cursor` catches up with a job's whole life (created, paused,
        /// resumed, completed) and a client upload's (created, canceled), in order; `wait` holds an
        /// empty answer until the next event; a cursor this feed did not give is 400.
        @Test func jsonCatchUpWithSince() async throws {
            let setup = try await Self.start()
            let dave = try await Reader.make(setup, "feed-dave")
            let start = try await dave.page("")
            #expect(start.status == 200 && start.header("content-type")?.hasPrefix("application/json") == true)
            let cursor = try #require(start.json["cursor"] as? String)
            #expect((start.json["events"] as? [Any])?.isEmpty == true)

            let gateway = dave.gateway
            let job = try await gateway.request(
                "POST", "/v1/jobs", token: dave.token, json: ["type": "upload", "accessLevel": "private", "key": "u.bin", "size": 5])
            let id = try #require(job.json["id"] as? String)
            #expect(try await gateway.request("POST", "/v1/jobs/\(id)/pause", token: dave.token).status == 200)
            #expect(try await gateway.request("POST", "/v1/jobs/\(id)/resume", token: dave.token).status == 200)
            let put = try await gateway.request(
                "PUT", "/v1/jobs/\(id)/data", token: dave.token, rawBody: Data("hello".utf8),
                headers: ["Content-Type": "application/octet-stream"])
            #expect(put.status == 200 && put.json["state"] as? String == "completed", "\(put.json)")
            let upload = try await gateway.request(
                "POST", "/v1/uploads", token: dave.token, json: ["accessLevel": "private", "key": "c.bin", "size": 10])
            let uploadID = try #require(upload.json["uploadId"] as? String)
            #expect(try await gateway.request("DELETE", "/v1/uploads/\(uploadID)", token: dave.token).status == 204)

            let caughtUp = try await dave.page("?since=\(cursor)")
            let events = try #require(caughtUp.json["events"] as? [[String: Any]])
            let types = events.compactMap { $0["type"] as? String }
            #expect(
                types.filter { $0 != "job.progress" }
                    == ["job.created", "job.paused", "job.resumed", "job.completed", "upload.created", "upload.canceled"],
                "\(types)")
            let jobEvents = events.filter { ($0["type"] as? String)?.hasPrefix("job.") == true }
            #expect(jobEvents.allSatisfy { ($0["data"] as? [String: Any])?["id"] as? String == id })
            #expect((jobEvents.first { $0["type"] as? String == "job.paused" }?["data"] as? [String: Any])?["state"] as? String == "paused")
            let uploadEvents = events.filter { ($0["type"] as? String)?.hasPrefix("upload.") == true }
            #expect(uploadEvents.allSatisfy { ($0["data"] as? [String: Any])?["uploadId"] as? String == uploadID })
            let numbers = events.compactMap { ($0["id"] as? String).flatMap(Int.init) }
            #expect(numbers == Array(((Int(cursor) ?? 0) + 1)...((Int(cursor) ?? 0) + events.count)))
            let next = try #require(caughtUp.json["cursor"] as? String)
            #expect(next == (events.last?["id"] as? String))
            #expect((try await dave.page("?since=\(next)").json["events"] as? [Any])?.isEmpty == true)
            // Bookkeeping on an ended job (as the janitor's) changes its version but tells nothing.
            try await PostgresPoolFor.live().withConnection { connection in
                // Its last progress long ago, so no throttle hides an event that should not be there.
                _ = try connection.query("UPDATE feed_progress SET at = at - interval '1 hour' WHERE subject_id = \(id)::uuid")
                _ = try connection.query("UPDATE jobs SET version = version + 1, updated_at = now() WHERE id = \(id)::uuid")
            }
            #expect((try await dave.page("?since=\(next)").json["events"] as? [Any])?.isEmpty == true)

            // A long poll from the cursor is answered by the next change.
            let later = Task { try await dave.page("?since=\(next)&wait=20").body }
            try await Task.sleep(for: .milliseconds(300))
            let another = try await dave.completeAJob()
            let woken = (try JSONSerialization.jsonObject(with: try await later.value)) as? [String: Any]
            let wokenEvents = woken?["events"] as? [[String: Any]] ?? []
            #expect(wokenEvents.first?["type"] as? String == "job.created")
            #expect((wokenEvents.first?["data"] as? [String: Any])?["id"] as? String == another)

            for bad in ["abc", "-1", "\((Int(next) ?? 0) + 1000)"] {
                let refused = try await dave.page("?since=\(bad)")
                #expect(refused.status == 400 && refused.json["code"] as? String == "validation_failed", "\(bad): \(refused.json)")
            }
            let garbage = try await gateway.request(
                "GET", "/v1/events", token: dave.token, headers: ["Last-Event-ID": "not-a-number"])
            #expect(garbage.status == 400)
            await setup.stop()
        }

        /// `GET /v1/events/link` gives an `eventsUrl` that opens the feed with no header; one
        /// with its signature changed, or naming another identity, is refused.
        @Test func theSignedLinkOpensTheFeedWithoutAHeader() async throws {
            let setup = try await Self.start()
            let erin = try await Reader.make(setup, "feed-erin")
            let answer = try await erin.gateway.request("GET", "/v1/events/link", token: erin.token)
            #expect(answer.status == 200, "\(answer.json)")
            let link = try #require(answer.json["eventsUrl"] as? String)
            #expect(link.hasPrefix("http://127.0.0.1:\(erin.gateway.port)/v1/events?identity="))
            let feed = try StreamReader(link)
            try await feed.until("the feed to open") { feed.text.contains("retry: 2000") }
            let id = try await erin.completeAJob()
            try await feed.until("the completion") { !Self.completions(feed).isEmpty }
            #expect(Self.completions(feed).map(\.job) == [id])
            feed.stop()
            let forged = link.replacingOccurrences(of: "signature=", with: "signature=0")
            #expect(try curl(["-o", "/dev/null", forged]).status == 403)
            // Mallory's name with Erin's signature.
            var components = try #require(URLComponents(string: link))
            components.queryItems = components.queryItems?.map {
                $0.name == "identity" ? URLQueryItem(name: "identity", value: "ZmVlZC1tYWxsb3J5") : $0
            }
            let someoneElse = try #require(components.string)
            #expect(someoneElse != link)
            #expect(try curl(["-o", "/dev/null", someoneElse]).status == 403)
            #expect(try curl(["-o", "/dev/null", erin.url]).status == 401)
            await setup.stop()
        }

        /// Bytes flowing make `job.progress` events, at most one a second per job.
        @Test func progressIsToldAtMostOnceASecond() async throws {
            let setup = try await Self.start()
            let frank = try await Reader.make(setup, "feed-frank")
            let start = try #require(try await frank.page("").json["cursor"] as? String)
            let size = 12 << 20
            let job = try await frank.gateway.request(
                "POST", "/v1/jobs", token: frank.token, json: ["type": "upload", "accessLevel": "private", "key": "p.bin", "size": size])
            let id = try #require(job.json["id"] as? String)
            let file = FileManager.default.temporaryDirectory.appendingPathComponent("feed-\(UUID().uuidString)")
            try Data(repeating: 7, count: size).write(to: file)
            defer { try? FileManager.default.removeItem(at: file) }
            let sent = try curl([
                "-X", "PUT", "-T", file.path, "--limit-rate", "3M", "-H", "Authorization: Bearer \(frank.token)",
                "http://127.0.0.1:\(frank.gateway.port)/v1/jobs/\(id)/data",
            ])
            #expect(sent.status == 200, "\(sent.body)")
            let events = try #require(try await frank.page("?since=\(start)").json["events"] as? [[String: Any]])
            #expect(events.first?["type"] as? String == "job.created" && events.last?["type"] as? String == "job.completed")
            let progress = events.filter { $0["type"] as? String == "job.progress" }
            let times = progress.compactMap { ($0["createdAt"] as? String).flatMap(Self.milliseconds) }
            #expect(times.count == progress.count && progress.count >= 2, "\(events.compactMap { $0["type"] })")
            for (earlier, later) in zip(times, times.dropFirst()) { #expect(later - earlier >= 990, "\(times)") }
            let bytes = progress.compactMap { ($0["data"] as? [String: Any])?["bytesTransferred"] as? Int }
            #expect(bytes == bytes.sorted() && bytes.contains { $0 > 0 && $0 < size }, "\(bytes)")
            await setup.stop()
        }

        /// `2026-12-03T10:00:00.123Z` → milliseconds since 1970.
        static func milliseconds(_ text: String) -> Int? {
            let formatter = ISO8601DateFormatter()
            formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
            return formatter.date(from: text).map { Int(($0.timeIntervalSince1970 * 1000).rounded()) }
        }

        /// The `job.completed` events of a stream, as (event number, job id).
        static func completions(_ stream: StreamReader) -> [(number: Int, job: String)] {
            stream.text.components(separatedBy: "\n\n").compactMap { block -> (Int, String)? in
                let lines = block.split(separator: "\n")
                guard lines.contains("event: job.completed"),
                    let number = lines.first(where: { $0.hasPrefix("id: ") }).flatMap({ Int($0.dropFirst(4)) }),
                    let data = lines.first(where: { $0.hasPrefix("data: ") }),
                    let envelope = (try? JSONSerialization.jsonObject(with: Data(data.dropFirst(6).utf8))) as? [String: Any],
                    let job = (envelope["data"] as? [String: Any])?["id"] as? String
                else { return nil }
                return (number, job)
            }
        }
    }
}

import Foundation
import Testing
import TransferEngine

@testable import Gateway

/// `GET /v1/events` and `/v1/events/link` over the feed's twin.
struct EventFeedRoutesTests {
    static let json = [("Accept", "application/json")]

    static func job(_ owner: String, _ state: Job.State = .queued) -> FeedEvent.Subject {
        .job(
            Job(
                id: UUID().uuidString.lowercased(), owner: owner, kind: .copy, state: state, objectKey: "private/\(owner)/k",
                source: .object(ObjectSource(key: "private/\(owner)/s")), bytesTotal: 10, partSize: 5 << 20))
    }

    static func events(_ answer: RouteRig.Answer) -> [[String: Any]] { answer.json["events"] as? [[String: Any]] ?? [] }

    @Test func jsonCatchUpGivesTheEventsAfterTheCursorAndWhereToGoOn() async throws {
        let rig = try RouteRig()
        for state in [Job.State.queued, .paused, .queued, .completed] {
            rig.feed.record(owner: "alice", type: "job.\(state.rawValue)", subject: Self.job("alice", state))
        }
        let all = try await rig.send("GET", "/v1/events?since=0", as: "alice", headers: Self.json)
        #expect(all.status == 200, "\(all.json)")
        #expect(Self.events(all).compactMap { $0["id"] as? String } == ["1", "2", "3", "4"])
        #expect(all.json["cursor"] as? String == "4")
        let first = try #require(Self.events(all).first)
        #expect(first["type"] as? String == "job.queued")
        #expect((first["createdAt"] as? String)?.hasSuffix("Z") == true)
        #expect((first["data"] as? [String: Any])?["state"] as? String == "queued")
        let rest = try await rig.send("GET", "/v1/events?since=2&limit=1", as: "alice", headers: Self.json)
        #expect(Self.events(rest).compactMap { $0["id"] as? String } == ["3"] && rest.json["cursor"] as? String == "3")
        let none = try await rig.send("GET", "/v1/events?since=4", as: "alice", headers: Self.json)
        #expect(Self.events(none).isEmpty && none.json["cursor"] as? String == "4")
        // Without a position the feed starts now: nothing, and the cursor to poll from.
        let now = try await rig.send("GET", "/v1/events", as: "alice", headers: Self.json)
        #expect(Self.events(now).isEmpty && now.json["cursor"] as? String == "4")
    }

    @Test func anIdentitySeesOnlyItsOwnEvents() async throws {
        let rig = try RouteRig()
        rig.feed.record(owner: "alice", type: "job.created", subject: Self.job("alice"))
        rig.feed.record(owner: "bob", type: "job.created", subject: Self.job("bob"))
        let bob = try await rig.send("GET", "/v1/events?since=0", as: "bob", headers: Self.json)
        #expect(Self.events(bob).count == 1)
        #expect((Self.events(bob).first?["data"] as? [String: Any])?["objectKey"] as? String == "private/bob/k")
        let carol = try await rig.send("GET", "/v1/events?since=0", as: "carol", headers: Self.json)
        #expect(Self.events(carol).isEmpty)
        // Alice's cursor means nothing to Carol, who has no events: refused.
        let borrowed = try await rig.send("GET", "/v1/events?since=1", as: "carol", headers: Self.json)
        #expect(borrowed.status == 400 && borrowed.code == "validation_failed")
    }

    @Test(arguments: ["since=abc", "since=-1", "since=01", "since=99", "since=", "wait=61", "limit=0", "limit=1001", "cursor=1"])
    func aBadQueryIsRefused(query: String) async throws {
        let rig = try RouteRig()
        rig.feed.record(owner: "alice", type: "job.created", subject: Self.job("alice"))
        let answer = try await rig.send("GET", "/v1/events?\(query)", as: "alice", headers: Self.json)
        #expect(answer.status == 400, "\(answer.json)")
        #expect(["validation_failed", "unknown_field"].contains(answer.code ?? ""), "\(answer.json)")
    }

    @Test(arguments: ["abc", "2", "-1", "1.5", "0x1"])
    func aBadLastEventIDIsRefused(lastEventID: String) async throws {
        let rig = try RouteRig()
        rig.feed.record(owner: "alice", type: "job.created", subject: Self.job("alice"))
        let answer = try await rig.send("GET", "/v1/events", as: "alice", headers: [("Last-Event-ID", lastEventID)])
        #expect(answer.status == 400 && answer.code == "validation_failed", "\(answer.json)")
    }

    @Test func theStreamIsTheDefaultAndNeedsAToken() async throws {
        let rig = try RouteRig()
        let stream = try await rig.send("GET", "/v1/events", as: "alice")
        #expect(stream.status == 200)
        #expect(stream.headers["content-type"]?.hasPrefix("text/event-stream") == true)
        #expect(try await rig.send("GET", "/v1/events").status == 401)
        #expect(try await rig.send("GET", "/v1/events", headers: Self.json).status == 401)
    }

    /// `id:`, `event:`, one `data:` line with the envelope, a blank line.
    @Test func anEventOnTheStreamIsItsNumberTypeAndEnvelope() throws {
        let event = FeedEvent(sequence: 7, type: "job.completed", createdAt: 1_800_000_000_123, subject: Self.job("alice", .completed))
        let text = String(decoding: EventFeedRoutes.sse(event), as: UTF8.self)
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
        #expect(lines.count == 5 && lines[0] == "id: 7" && lines[1] == "event: job.completed" && lines[3] == "" && lines[4] == "")
        let envelope = try #require(try JSONSerialization.jsonObject(with: Data(lines[2].dropFirst(6).utf8)) as? [String: Any])
        #expect(envelope["id"] as? String == "7" && envelope["type"] as? String == "job.completed")
        #expect(envelope["createdAt"] as? String == "2027-01-15T08:00:00.123Z")
        #expect((envelope["data"] as? [String: Any])?["state"] as? String == "completed")
    }

    @Test func aLongPollIsWokenByTheNextEvent() async throws {
        let rig = try RouteRig()
        rig.feed.record(owner: "alice", type: "job.created", subject: Self.job("alice"))
        let feed = rig.feed
        Task {
            try await Task.sleep(for: .milliseconds(200))
            feed.record(owner: "alice", type: "job.completed", subject: Self.job("alice", .completed))
        }
        let started = ContinuousClock.now
        let answer = try await rig.send("GET", "/v1/events?since=1&wait=60", as: "alice", headers: Self.json)
        #expect(Self.events(answer).compactMap { $0["type"] as? String } == ["job.completed"], "\(answer.json)")
        // Answered by the event, not by the deadline (generous: the whole suite shares two cores).
        #expect(ContinuousClock.now - started < .seconds(50))
    }

    @Test func theSignedLinkOpensTheFeedWithoutAHeaderAndATamperedOneIsRefused() async throws {
        let rig = try RouteRig { $0.linkSecret = Array("links-of-the-route-tests-32-bytes".utf8) }
        rig.feed.record(owner: "alice", type: "job.created", subject: Self.job("alice"))
        rig.feed.record(owner: "bob", type: "job.created", subject: Self.job("bob"))
        let link = try await rig.send("GET", "/v1/events/link", as: "alice")
        #expect(link.status == 200, "\(link.json)")
        let url = try #require(link.json["eventsUrl"] as? String)
        #expect(url.hasPrefix("http://rig/v1/events?identity="))
        #expect(link.json["expiresAt"] is String)
        let target = String(url.dropFirst("http://rig".count))
        let opened = try await rig.send("GET", target + "&since=0", headers: Self.json)
        #expect(opened.status == 200 && Self.events(opened).count == 1, "\(opened.json)")
        #expect((Self.events(opened).first?["data"] as? [String: Any])?["objectKey"] as? String == "private/alice/k")
        #expect(try await rig.send("GET", target).status == 200)
        // Another identity's name under Alice's signature, or a signature changed by one digit.
        let bob = target.replacingOccurrences(of: "identity=YWxpY2U", with: "identity=Ym9i")
        #expect(bob != target)
        #expect(try await rig.send("GET", bob + "&since=0", headers: Self.json).status == 403)
        let last = target.last == "0" ? "1" : "0"
        let tampered = String(target.dropLast()) + last
        let refused = try await rig.send("GET", tampered, headers: Self.json)
        #expect(refused.status == 403 && refused.code == "forbidden")
        #expect(try await rig.send("GET", "/v1/events?identity=YWxpY2U&since=0", headers: Self.json).status == 403)
        #expect(try await rig.send("GET", "/v1/events/link").status == 401)
    }

    @Test func withoutALinkSecretThereIsNoLink() async throws {
        let rig = try RouteRig()
        #expect(try await rig.send("GET", "/v1/events/link", as: "alice").status == 501)
    }
}

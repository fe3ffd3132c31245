import Auth
import Crypto
import Foundation
import Postgres
import S3
import TestSupport
import Testing

@testable import Adapters
@testable import Gateway
@testable import TransferGateway

/// What one signed-in user could do to a gateway, tried against the real PostgreSQL and
/// SeaweedFS: every answer bounded, every input answered with a code, nothing trapped.
extension JobTableTests {
    @Suite struct BoundsLiveTests {
        func waitFor(
            _ gateway: LiveGateway, _ token: String, _ id: String, timeout: Double = 60,
            _ condition: ([String: Any]) -> Bool
        ) async throws -> [String: Any] {
            let deadline = Date().addingTimeInterval(timeout)
            var job = try await gateway.request("GET", "/v1/jobs/\(id)", token: token).json
            while !condition(job) && Date() < deadline {
                try await Task.sleep(for: .milliseconds(50))
                job = try await gateway.request("GET", "/v1/jobs/\(id)", token: token).json
            }
            return job
        }

        /// A paced copy paused after a few parts, its source replaced by a smaller object, resumed:
        /// the job fails `source_changed` and the gateway goes on answering.
        @Test func aCopyWhoseSourceShrankWhilePausedFailsAndTheGatewayLives() async throws {
            let gateway = try LiveGateway { $0.leaseSeconds = 2 }
            try await JobTableTests.retireLeftovers(PostgresPoolFor.live())
            gateway.app.worker?.start()
            let client = try gateway.configuration.makeS3Client()
            let token = gateway.token("alice")
            let folder = "shrink-\(UUID().uuidString)"
            _ = try await client.putObject(key: "private/alice/\(folder)/src.bin", body: .bytes([UInt8](repeating: 1, count: 40 << 20)))
            let created = try await gateway.request(
                "POST", "/v1/jobs", token: token,
                json: [
                    "type": "copy", "concurrency": 1, "bandwidthLimit": 10 << 20,
                    "source": ["accessLevel": "private", "key": "\(folder)/src.bin"],
                    "destination": ["accessLevel": "private", "key": "\(folder)/dst.bin"],
                ])
            let id = try #require(created.json["id"] as? String, "\(created.json)")
            _ = try await waitFor(gateway, token, id) { ($0["partsCompleted"] as? Int ?? 0) >= 2 }
            #expect(try await gateway.request("POST", "/v1/jobs/\(id)/pause", token: token).status == 200)
            _ = try await waitFor(gateway, token, id, timeout: 10) { _ in gateway.app.worker?.activeJobs == 0 }
            _ = try await client.putObject(key: "private/alice/\(folder)/src.bin", body: .bytes([UInt8](repeating: 2, count: 6 << 20)))
            #expect(try await gateway.request("POST", "/v1/jobs/\(id)/resume", token: token).status == 200)
            let ended = try await waitFor(gateway, token, id) { ["completed", "failed"].contains($0["state"] as? String ?? "") }
            #expect(ended["state"] as? String == "failed", "\(ended)")
            #expect((ended["error"] as? [String: Any])?["code"] as? String == "source_changed")
            #expect(try await gateway.request("GET", "/healthz").status == 200)
            #expect(try await client.listMultipartUploads(prefix: "private/alice/\(folder)/").isEmpty)
            await gateway.app.worker?.stop()
            await gateway.stop()
        }

        /// A long poll is woken by the change itself, whichever instance made it: no row polling.
        @Test func aLongPollIsWokenByAChangeOnAnotherInstance() async throws {
            let a = try LiveGateway(), b = try LiveGateway()
            #expect(await eventuallyAsync { a.app.changes.isLive }, "the listener connects")
            let token = a.token("alice")
            let created = try await a.request(
                "POST", "/v1/jobs", token: token,
                json: ["type": "upload", "accessLevel": "private", "key": "poll-\(UUID()).bin", "size": 10])
            let id = try #require(created.json["id"] as? String)
            let started = Date()
            let poll = Task { try await a.request("GET", "/v1/jobs/\(id)?wait=30", token: token).json["state"] as? String }
            try await Task.sleep(for: .milliseconds(300))
            #expect(try await b.request("POST", "/v1/jobs/\(id)/pause", token: token).status == 200)
            #expect(try await poll.value == "paused")
            #expect(Date().timeIntervalSince(started) < 3, "woken by the change, not by the 30 s deadline")
            await a.stop()
            await b.stop()
        }

        /// One identity holds at most GATEWAY_USER_MAX_WAITS long polls; a client that hangs up
        /// gives its slot back at once.
        @Test func longPollsPerIdentityAreBoundedAndHangUpsFreeThem() async throws {
            let gateway = try LiveGateway { $0.userMaxWaits = 1 }
            let token = gateway.token("alice")
            let created = try await gateway.request(
                "POST", "/v1/jobs", token: token,
                json: ["type": "upload", "accessLevel": "private", "key": "waits-\(UUID()).bin"])
            let id = try #require(created.json["id"] as? String)
            func waitsOpen() async throws -> Int? {
                let text = String(decoding: try await gateway.request("GET", "/metrics").body, as: UTF8.self)
                return text.split(separator: "\n").first { $0.hasPrefix("gateway_waits_open ") }.flatMap {
                    Int($0.split(separator: " ")[1])
                }
            }
            do {
                let held = try LoopbackClient(port: gateway.port)
                try held.send("GET /v1/jobs/\(id)?wait=60 HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer \(token)\r\n\r\n")
                let registered = Date().addingTimeInterval(10)
                while try await waitsOpen() != 1 && Date() < registered { try await Task.sleep(for: .milliseconds(20)) }
                let refused = try await gateway.request("GET", "/v1/jobs/\(id)?wait=1", token: token)
                #expect(refused.status == 429 && refused.json["code"] as? String == "quota_exceeded")
                #expect(refused.headers["Retry-After"] != nil)
            }
            // The held client has closed: its slot is free within moments, not after 60 s.
            let hungUp = Date()
            while try await waitsOpen() != 0 && Date().timeIntervalSince(hungUp) < 10 { try await Task.sleep(for: .milliseconds(20)) }
            // Moments, not the poll's 60 s: alone it takes about 0.1 s; beside the other suites on two
            // cores it once took 2.4 s.
            #expect(Date().timeIntervalSince(hungUp) < 5, "the slot came back \(Date().timeIntervalSince(hungUp)) s after the hang-up")
            #expect(try await gateway.request("GET", "/v1/jobs/\(id)?wait=1", token: token).status == 200)
            await gateway.stop()
        }

        /// Active jobs, open uploads and creations per second are bounded per identity: 429 with
        /// `Retry-After`, and one identity's limit is not another's.
        @Test func quotasAnswer429WithRetryAfter() async throws {
            try await JobTableTests.retireLeftovers(PostgresPoolFor.live())
            let gateway = try LiveGateway {
                $0.userMaxActiveJobs = 2
                $0.userMaxOpenUploads = 1
            }
            let alice = gateway.token("quota-alice-\(UUID())")
            func upload() async throws -> LiveGateway.Answer {
                try await gateway.request(
                    "POST", "/v1/jobs", token: alice,
                    json: ["type": "upload", "accessLevel": "private", "key": "q-\(UUID()).bin"])
            }
            #expect(try await upload().status == 201)
            let secondUpload = try await upload()
            #expect(secondUpload.status == 429 && secondUpload.json["code"] as? String == "quota_exceeded", "\(secondUpload.json)")
            #expect(secondUpload.headers["Retry-After"] != nil)
            let clientUpload = try await gateway.request(
                "POST", "/v1/uploads", token: alice,
                json: ["accessLevel": "private", "key": "q.bin", "size": 10])
            #expect(clientUpload.status == 429, "the upload job is this identity's one open upload")
            let copy: [String: Any] = [
                "type": "copy", "source": ["accessLevel": "private", "key": "nothing.bin"],
                "destination": ["accessLevel": "private", "key": "copy.bin"],
            ]
            let queued = try await gateway.request("POST", "/v1/jobs", token: alice, json: copy)
            #expect(queued.status == 201)
            let third = try await gateway.request("POST", "/v1/jobs", token: alice, json: copy)
            #expect(third.status == 429, "two active jobs already")
            #expect(
                try await gateway.request(
                    "POST", "/v1/jobs", token: gateway.token("quota-bob-\(UUID())"),
                    json: ["type": "upload", "accessLevel": "private", "key": "b.bin"]
                ).status == 201)
            await gateway.stop()

            let fast = try LiveGateway { $0.userRate = 1 }
            let carol = fast.token("rate-carol-\(UUID())")
            var statuses: [Int] = []
            // A slow machine refills a token between requests now and then: a 429 comes within a
            // few more, not necessarily the sixth.
            while statuses.count < 12 && statuses.last != 429 {
                statuses.append(
                    try await fast.request(
                        "POST", "/v1/jobs", token: carol,
                        json: ["type": "upload", "accessLevel": "private", "key": "r.bin"]
                    ).status)
            }
            #expect(statuses.prefix(5).allSatisfy { $0 == 201 }, "a burst of five is allowed: \(statuses)")
            #expect(statuses.last == 429, "\(statuses)")
            try await JobTableTests.retireLeftovers(PostgresPoolFor.live())
            await fast.stop()
        }

        /// A write naming someone else is 403; a list cursor is only its own identity's; a tus
        /// creation whose body goes past Upload-Length is 413.
        @Test func smallerRefusals() async throws {
            let gateway = try LiveGateway()
            let alice = gateway.token("alice"), bob = gateway.token("bob")
            let forBob = try await gateway.request(
                "POST", "/v1/jobs", token: alice,
                json: [
                    "type": "upload", "accessLevel": "private", "key": "x.bin", "targetIdentityId": "bob",
                ])
            #expect(forBob.status == 403)
            let copyForBob = try await gateway.request(
                "POST", "/v1/jobs", token: alice,
                json: [
                    "type": "copy", "source": ["accessLevel": "private", "key": "a.bin"],
                    "destination": ["accessLevel": "protected", "key": "b.bin", "targetIdentityId": "bob"],
                ])
            #expect(copyForBob.status == 403)
            let own = try await gateway.request(
                "POST", "/v1/jobs", token: alice,
                json: [
                    "type": "upload", "accessLevel": "private", "key": "x.bin", "targetIdentityId": "alice",
                ])
            #expect(own.status == 201)
            let aliceJob = try #require(own.json["id"] as? String)
            #expect(try await gateway.request("GET", "/v1/jobs?cursor=\(aliceJob)", token: bob).status == 400)
            let page = try await gateway.request("GET", "/v1/jobs?cursor=\(aliceJob)", token: alice)
            #expect(page.status == 200, "\(page.json)")
            let tus = try await gateway.request(
                "POST", "/v1/tus/", token: alice, rawBody: Data(repeating: 7, count: 10),
                headers: [
                    "Tus-Resumable": "1.0.0", "Upload-Length": "5", "Content-Type": "application/offset+octet-stream",
                    "Upload-Metadata": "key \(Data("tus-past.bin".utf8).base64EncodedString())",
                ])
            #expect(tus.status == 413)
            let jsonx = try await gateway.request(
                "POST", "/v1/presign", token: alice,
                rawBody: Data(#"{"operation":"get","accessLevel":"private","key":"a"}"#.utf8),
                headers: ["Content-Type": "application/jsonx"])
            #expect(jsonx.status == 415)
            await gateway.stop()
        }

        /// The token is checked before the body: a caller without one is answered 401 at once, and
        /// with `Expect: 100-continue` the body is never asked for.
        @Test func tokensAreCheckedBeforeBodies() async throws {
            let gateway = try LiveGateway()
            let connection = try LoopbackClient(port: gateway.port)
            try connection.send(
                "POST /v1/presign HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\nContent-Length: 1000\r\nExpect: 100-continue\r\n\r\n"
            )
            let (head, _) = try connection.readResponse(deadline: Date().addingTimeInterval(5))
            #expect(head.status == 401, "no 100 Continue, no waiting for the body")
            let noOperation = try await gateway.request("POST", "/v1/presign", json: ["accessLevel": "private", "key": "a"])
            #expect(noOperation.status == 401)
            let twice = try curl([
                "-X", "POST", "http://127.0.0.1:\(gateway.port)/v1/presign", "-H", "Authorization: Bearer \(gateway.token("alice"))",
                "-H", "Authorization: Bearer x", "-H", "Content-Type: application/json", "-d", "{}",
            ])
            #expect(twice.status == 400 && twice.body.contains("duplicate_authorization"))
            await gateway.stop()
        }

        /// An upload's bytes past its last part are staged in S3: the next request continues on
        /// another instance (its own spool) and the object is byte-identical.
        @Test func anUploadContinuesOnAnotherInstanceFromItsStagedTail() async throws {
            let a = try LiveGateway { $0.spoolDirectory = NSTemporaryDirectory() + "spool-a-" + UUID().uuidString }
            let b = try LiveGateway { $0.spoolDirectory = NSTemporaryDirectory() + "spool-b-" + UUID().uuidString }
            let token = a.token("alice")
            var bytes = [UInt8](repeating: 0, count: 12 << 20)
            for i in stride(from: 0, to: bytes.count, by: 97) { bytes[i] = UInt8(truncatingIfNeeded: i / 97) }
            let key = "staged-\(UUID().uuidString).bin"
            let created = try await a.request(
                "POST", "/v1/jobs", token: token,
                json: ["type": "upload", "accessLevel": "private", "key": key, "size": bytes.count])
            let id = try #require(created.json["id"] as? String)
            let first = try await a.request(
                "PATCH", "/v1/jobs/\(id)/data", token: token, rawBody: Data(bytes[0..<(7 << 20)]),
                headers: ["Upload-Offset": "0", "Content-Type": "application/offset+octet-stream"])
            #expect(first.status == 200 && first.json["bytesCommitted"] as? Int == 7 << 20, "\(first.json)")
            let second = try await b.request(
                "PATCH", "/v1/jobs/\(id)/data", token: token, rawBody: Data(bytes[(7 << 20)...]),
                headers: ["Upload-Offset": String(7 << 20), "Content-Type": "application/offset+octet-stream"])
            #expect(second.json["state"] as? String == "completed", "\(second.json)")
            let client = try a.configuration.makeS3Client()
            let stored = try await client.getObject(key: "private/alice/\(key)", sink: .memory(limit: 16 << 20)).body
            #expect(Digest.sha256(stored) == Digest.sha256(bytes))
            #expect(try await client.listObjects(prefix: EngineSettingsPrefix.staging + id).isEmpty, "the staged tail is gone")
            await a.stop()
            await b.stop()
        }

        /// An upload job cut by a crash (left `running`, its lease lapsed) and idle past the TTL is
        /// failed `upload_expired` and its S3 upload aborted; one that received bytes lately is kept.
        @Test func anUploadCutByACrashExpiresSinceItsLastByte() async throws {
            let gateway = try LiveGateway()
            let pool = try PostgresPoolFor.live()
            let token = gateway.token("alice")
            let folder = "expire-\(UUID().uuidString)"
            var ids: [String] = []
            for name in ["cut", "busy"] {
                let created = try await gateway.request(
                    "POST", "/v1/jobs", token: token,
                    json: ["type": "upload", "accessLevel": "private", "key": "\(folder)/\(name).bin", "size": 12 << 20])
                let id = try #require(created.json["id"] as? String)
                _ = try await gateway.request(
                    "PATCH", "/v1/jobs/\(id)/data", token: token, rawBody: Data(count: 6 << 20),
                    headers: ["Upload-Offset": "0", "Content-Type": "application/offset+octet-stream"])
                ids.append(id)
            }
            // Both look cut by a crash; only `cut` last received bytes more than the TTL ago.
            let both = "{" + ids.joined(separator: ",") + "}", cutID = ids[0]
            try await pool.withConnection { connection in
                try connection.query(
                    """
                    UPDATE jobs SET state = 'running', lease_owner = 'dead', lease_expires_at = now() - interval '1 minute',
                           created_at = now() - interval '3 hours'
                    WHERE id = ANY(\(both)::uuid[])
                    """)
                try connection.query("UPDATE jobs SET bytes_at = now() - interval '2 hours' WHERE id = \(cutID)::uuid")
            }
            let janitor = try #require(gateway.app.janitor)
            // An hour past `cut`'s TTL, and well before `busy`'s.
            let later = Date().addingTimeInterval(Double(gateway.configuration.uploadTTL) - 3600)
            let aborted = try await janitor.sweep(prefixes: ["private/alice/\(folder)/"], now: later)
            #expect(aborted.count == 1)
            let cut = try await gateway.request("GET", "/v1/jobs/\(ids[0])", token: token).json
            #expect(cut["state"] as? String == "failed" && (cut["error"] as? [String: Any])?["code"] as? String == "upload_expired")
            let busy = try await gateway.request("GET", "/v1/jobs/\(ids[1])", token: token).json
            #expect(busy["state"] as? String == "running")
            let client = try gateway.configuration.makeS3Client()
            #expect(try await client.listMultipartUploads(prefix: "private/alice/\(folder)/cut.bin").isEmpty)
            let busyID = ids[1]
            try await pool.withConnection { try $0.query("UPDATE jobs SET state = 'canceled' WHERE id = \(busyID)::uuid") }
            await gateway.stop()
        }
    }
}

/// The staging prefix as the engine defaults it.
enum EngineSettingsPrefix {
    static let staging = "transfer-gateway-staging/"
}

/// Polls an async condition for up to `timeout` seconds.
func eventuallyAsync(timeout: Double = 10, _ condition: @Sendable () async -> Bool) async -> Bool {
    let deadline = Date().addingTimeInterval(timeout)
    while Date() < deadline {
        if await condition() { return true }
        try? await Task.sleep(for: .milliseconds(20))
    }
    return await condition()
}

import Crypto
import Foundation
import HTTPServer
import Postgres
import Synchronization
import Testing

@testable import TransferGateway

/// A webhook receiver on loopback: the project's own HTTP server, recording every POST and
/// answering `status` (503 while "down"). `events` are the bodies it acknowledged.
final class WebhookReceiver: HTTPResponder, @unchecked Sendable {
    struct Delivery: @unchecked Sendable {
        let signature: String
        let body: [UInt8]
        let json: [String: Any]
        let at: Date
    }

    let status = Atomic<Int>(200)
    private let received = Mutex<[Delivery]>([])
    private(set) var server: HTTPServer!
    private(set) var port = 0

    /// Starts on `port` (0: any free one).
    func start(port: Int = 0) throws {
        var settings = HTTPServerConfiguration()
        settings.host = "127.0.0.1"
        settings.port = port
        server = try HTTPServer(configuration: settings, responder: self, eventLoops: 1)
        self.port = try server.start()
    }

    func stop() async { await server.shutdown(grace: 1) }

    func respond(to request: HTTPRequest) async -> HTTPResponse {
        guard let body = try? await request.body.collect(upTo: 1 << 20) else { return .text(400, "body") }
        let answer = status.load(ordering: .relaxed)
        if (200...299).contains(answer) {
            let json = (try? JSONSerialization.jsonObject(with: Data(body))) as? [String: Any] ?? [:]
            received.withLock {
                $0.append(Delivery(signature: request.headers["gateway-signature"] ?? "", body: body, json: json, at: Date()))
            }
        }
        return .text(answer, "")
    }

    var deliveries: [Delivery] { received.withLock { $0 } }

    /// The deliveries of events about `subject` (a job's or an upload's id).
    func deliveries(about subject: String) -> [Delivery] {
        deliveries.filter { ($0.json["data"] as? [String: Any]).flatMap { $0["id"] ?? $0["uploadId"] } as? String == subject }
    }

    /// Waits (bounded) until `count` deliveries tell of `subject`.
    func waitFor(_ subject: String, count: Int = 1, timeout: TimeInterval = 30) async throws -> [Delivery] {
        let deadline = Date().addingTimeInterval(timeout)
        while deliveries(about: subject).count < count && Date() < deadline { try await Task.sleep(for: .milliseconds(20)) }
        return deliveries(about: subject)
    }
}

/// Webhooks end to end: the gateway's outbox, its delivery and the receiver on real sockets,
/// PostgreSQL and S3. Serialized with the other job suites (`JobTableTests`): every instance with
/// a receiver delivers every pending event to its own, so two of these tests at once would take
/// each other's events.
extension JobTableTests {
    @Suite struct WebhookLiveTests {
        static let secret = "webhook-test-secret-0123456789"

        /// Events left by earlier runs (their receivers long gone) are settled first.
        static func retireLeftovers() async throws {
            try await PostgresPoolFor.live().withConnection {
                try $0.query("UPDATE webhook_events SET state = 'failed' WHERE state = 'pending'")
            }
        }

        static func gateway(receiverPort: Int) async throws -> JobsLiveSetup {
            try await JobsLiveSetup.start(folderPrefix: "webhooks") {
                $0.webhookURL = "http://127.0.0.1:\(receiverPort)/hooks/transfer?source=gateway"
                $0.webhookSecret = secret
                // Sixty creations by one identity across two instances: the creation rate is the
                // fleet's, so its burst would refuse the last ten.
                $0.userRate = 1000
            }
        }

        /// Checks `Gateway-Signature: t=…,v1=…` against the body as a receiver would.
        static func signatureHolds(_ delivery: WebhookReceiver.Delivery) -> Bool {
            let parts = Dictionary(
                delivery.signature.split(separator: ",").compactMap { item -> (String, String)? in
                    let pair = item.split(separator: "=", maxSplits: 1)
                    return pair.count == 2 ? (String(pair[0]), String(pair[1])) : nil
                }, uniquingKeysWith: { first, _ in first })
            guard let t = parts["t"], let v1 = parts["v1"], let time = Double(t), abs(time - Date().timeIntervalSince1970) < 300 else {
                return false
            }
            return Digest.hex(Digest.hmacSHA256(key: Array(secret.utf8), Array("\(t).".utf8) + delivery.body)) == v1
        }

        @Test func aCopyJobsCompletionReachesTheReceiverSigned() async throws {
            try await Self.retireLeftovers()
            let receiver = WebhookReceiver()
            try receiver.start()
            let setup = try await Self.gateway(receiverPort: receiver.port)
            _ = try await setup.client.putObject(key: "\(setup.prefix)/a.bin", body: .bytes(Array(repeating: 7, count: 1000)))
            let job = try await setup.run([
                "type": "copy", "source": ["accessLevel": "private", "key": "\(setup.folder)/a.bin"],
                "destination": ["accessLevel": "private", "key": "\(setup.folder)/b.bin"],
            ])
            let id = try #require(job["id"] as? String)
            #expect(job["state"] as? String == "completed")
            let delivered = try await receiver.waitFor(id)
            let event = try #require(delivered.first, "no event reached the receiver")
            #expect(delivered.count == 1)
            #expect(Self.signatureHolds(event), "the signature does not match the body")
            #expect(event.json["type"] as? String == "job.completed")
            #expect(UUID(uuidString: event.json["id"] as? String ?? "") != nil)
            #expect((event.json["createdAt"] as? String)?.hasSuffix("Z") == true)
            let data = try #require(event.json["data"] as? [String: Any])
            #expect(data["state"] as? String == "completed" && data["type"] as? String == "copy")
            #expect(data["bytesTotal"] as? Int == 1000)
            #expect(event.at.timeIntervalSince(Date()) < 5)
            // Nothing of the receiver's URL or the secret reaches the log.
            let logged = setup.gateway.logs.all.joined(separator: "\n")
            #expect(!logged.contains("source=gateway") && !logged.contains(Self.secret))
            await setup.stop()
            await receiver.stop()
        }

        /// The receiver is down (connections refused) for ten seconds, then up: the event comes
        /// with a retry, the same id it had.
        @Test func aReceiverDownForTenSecondsGetsTheEventLater() async throws {
            try await Self.retireLeftovers()
            let receiver = WebhookReceiver()
            try receiver.start()
            let port = receiver.port
            await receiver.stop()
            let setup = try await Self.gateway(receiverPort: port)
            _ = try await setup.client.putObject(key: "\(setup.prefix)/a.bin", body: .bytes(Array(repeating: 1, count: 100)))
            let job = try await setup.run([
                "type": "copy", "source": ["accessLevel": "private", "key": "\(setup.folder)/a.bin"],
                "destination": ["accessLevel": "private", "key": "\(setup.folder)/c.bin"],
            ])
            let id = try #require(job["id"] as? String)
            let down = Date()
            try await Task.sleep(for: .seconds(10))  // the outage itself, not a wait for a condition
            try receiver.start(port: port)
            let delivered = try await receiver.waitFor(id, timeout: 45)
            let event = try #require(delivered.first, "the event never came after the receiver was back")
            #expect(event.at.timeIntervalSince(down) >= 10)
            #expect(Self.signatureHolds(event))
            let eventID = event.json["id"] as? String ?? ""
            let attempts = try await PostgresPoolFor.live().withConnection {
                try $0.query("SELECT attempts FROM webhook_events WHERE id = \(eventID)::uuid").first?.int("attempts")
            }
            #expect((attempts ?? 0) >= 2, "delivered at the first attempt, while the receiver was down?")
            await setup.stop()
            await receiver.stop()
        }

        /// The event is written with the change itself: a change made while no instance could
        /// deliver (this one's receiver unreachable, then the instance gone) is delivered by the
        /// next instance; a change rolled back leaves no event.
        @Test func anEventOutlivesItsInstanceAndARollbackLeavesNone() async throws {
            try await Self.retireLeftovers()
            let first = try await Self.gateway(receiverPort: 9)  // discard port: nothing listens
            _ = try await first.client.putObject(key: "\(first.prefix)/a.bin", body: .bytes(Array(repeating: 2, count: 100)))
            let job = try await first.run([
                "type": "copy", "source": ["accessLevel": "private", "key": "\(first.folder)/a.bin"],
                "destination": ["accessLevel": "private", "key": "\(first.folder)/d.bin"],
            ])
            let id = try #require(job["id"] as? String)
            let pool = PostgresPool(url: first.gateway.configuration.databaseURL ?? "", size: 1, settings: [("gateway.webhooks", "on")])
            let recorded = try await pool.withConnection {
                try $0.query("SELECT count(*)::int AS n FROM webhook_events WHERE subject_id = \(id)::uuid AND state = 'pending'").first?
                    .int("n")
            }
            #expect(recorded == 1, "the completion was not recorded for delivery")
            // A change rolled back: no event, though the session records events.
            let other = try await first.run([
                "type": "copy", "source": ["accessLevel": "private", "key": "\(first.folder)/a.bin"],
                "destination": ["accessLevel": "private", "key": "\(first.folder)/e.bin"],
            ])
            let otherID = try #require(other["id"] as? String)
            try await pool.withConnection { connection in
                try connection.execute("BEGIN")
                try connection.query("UPDATE jobs SET state = 'failed' WHERE id = \(otherID)::uuid")
                try connection.execute("ROLLBACK")
            }
            let rolledBack = try await pool.withConnection {
                try $0.query("SELECT count(*)::int AS n FROM webhook_events WHERE subject_id = \(otherID)::uuid AND type = 'job.failed'")
                    .first?.int("n")
            }
            #expect(rolledBack == 0, "an event was recorded for a change that rolled back")
            await first.stop()

            let receiver = WebhookReceiver()
            try receiver.start()
            let second = try await Self.gateway(receiverPort: receiver.port)
            let delivered = try await receiver.waitFor(id, timeout: 30)
            #expect(delivered.count == 1 && delivered.first.map(Self.signatureHolds) == true)
            await second.stop()
            await receiver.stop()
        }

        /// Two instances, one receiver, 60 events (download jobs complete as they are made): every
        /// event arrives, and each exactly once.
        @Test func twoInstancesDeliverEachEventOnce() async throws {
            try await Self.retireLeftovers()
            let receiver = WebhookReceiver()
            try receiver.start()
            let one = try await Self.gateway(receiverPort: receiver.port)
            let two = try await Self.gateway(receiverPort: receiver.port)
            _ = try await one.client.putObject(key: "\(one.prefix)/a.bin", body: .bytes(Array(repeating: 3, count: 10)))
            var ids: [String] = []
            for index in 0..<60 {
                let gateway = index % 2 == 0 ? one.gateway : two.gateway
                let created = try await gateway.request(
                    "POST", "/v1/jobs", token: one.token,
                    json: ["type": "download", "source": ["accessLevel": "private", "key": "\(one.folder)/a.bin"]])
                ids.append(try #require(created.json["id"] as? String, "\(created.json)"))
            }
            let deadline = Date().addingTimeInterval(30)
            while Set(ids).subtracting(receiver.deliveries.compactMap { ($0.json["data"] as? [String: Any])?["id"] as? String }).count > 0
                && Date() < deadline
            {
                try await Task.sleep(for: .milliseconds(50))
            }
            try await Task.sleep(for: .milliseconds(500))  // room for a duplicate to show up
            let ours = receiver.deliveries.filter { ids.contains(($0.json["data"] as? [String: Any])?["id"] as? String ?? "") }
            let eventIDs = ours.compactMap { $0.json["id"] as? String }
            #expect(ours.count == 60, "\(ours.count) deliveries for 60 events")
            #expect(Set(eventIDs).count == 60, "\(Set(eventIDs).count) distinct events")
            #expect(ours.allSatisfy { $0.json["type"] as? String == "job.completed" })
            await one.stop()
            await two.stop()
            await receiver.stop()
        }
    }
}

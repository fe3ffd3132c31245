import Auth
import Foundation
import Postgres
import S3
import TestSupport
import Testing

@testable import Adapters
@testable import Gateway
@testable import TransferGateway

/// Three instances on one database, every request sent to the next one: per-identity limits hold
/// for the fleet (creations at GATEWAY_USER_RATE, not three times it; waits, data streams and
/// active jobs likewise), a data link made on one is served by another with no
/// GATEWAY_LINK_SECRET set (the one `migrate` kept), instances that disagree are named in
/// `/readyz` and listed for admins, and a schema newer than the binary is refused.
extension JobTableTests {
    @Suite struct FleetLiveTests {
        /// Three gateways sharing what `serve` reads from the database first.
        func fleet(_ tweak: @escaping (inout Configuration) -> Void = { _ in }) async throws -> [LiveGateway] {
            try await JobTableTests.retireLeftovers(PostgresPoolFor.live())
            let url = try Configuration.fromEnvironment(ProcessInfo.processInfo.environment).databaseURL ?? ""
            let (_, deployment) = try await GatewayApp.prepareDatabase(databaseURL: url)
            let gateways = try (0..<3).map { _ in
                try LiveGateway(deployment: deployment) {
                    $0.linkSecret = nil
                    tweak(&$0)
                }
            }
            // As `serve` does: each beats, so its holds count for the others.
            for gateway in gateways {
                if let fleet = gateway.app.fleet {
                    try await fleet.beat()
                    Task { await fleet.run() }
                }
            }
            return gateways
        }

        func stop(_ gateways: [LiveGateway]) async throws {
            for gateway in gateways {
                await gateway.app.fleet?.leave()
                await gateway.stop()
            }
            try await JobTableTests.retireLeftovers(PostgresPoolFor.live())
        }

        func uploadJob(_ gateway: LiveGateway, _ token: String) async throws -> LiveGateway.Answer {
            try await gateway.request(
                "POST", "/v1/jobs", token: token, json: ["type": "upload", "accessLevel": "private", "key": "fleet-\(UUID()).bin"])
        }

        /// GATEWAY_USER_RATE 4 (bursts of 20) for 6 s of requests as fast as they go, each to the
        /// next instance: some 44 creations, where three instances counting alone allow 132.
        @Test func creationsAreLimitedForTheFleetNotPerInstance() async throws {
            let gateways = try await fleet {
                $0.userRate = 4
                $0.userMaxActiveJobs = 100_000
                $0.userMaxOpenUploads = 100_000
            }
            let token = gateways[0].token("fleet-rate-\(UUID())")
            let started = Date()
            var created = 0, refused = 0, turn = 0
            while Date().timeIntervalSince(started) < 6 {
                let answer = try await uploadJob(gateways[turn % 3], token)
                turn += 1
                if answer.status == 201 { created += 1 } else if answer.status == 429 { refused += 1 }
                #expect(answer.status == 201 || answer.status == 429, "\(answer.status) \(answer.json)")
            }
            let seconds = Date().timeIntervalSince(started)
            let allowed = 20 + 4 * seconds
            print(
                "fleet-rate: \(created) created, \(refused) refused in \(turn) requests over \(seconds) s; one instance allows \(allowed)")
            #expect(Double(created) <= allowed * 1.2 && Double(created) >= allowed * 0.8, "\(created) created; allowed \(allowed)")
            #expect(refused > 0)
            try await stop(gateways)
        }

        /// GATEWAY_USER_MAX_WAITS 2, MAX_STREAMS 1, MAX_ACTIVE_JOBS 2, each taken on another
        /// instance than the one refused; a hang-up frees its slot for the whole fleet.
        @Test func waitsStreamsAndActiveJobsAreCountedForTheFleet() async throws {
            let gateways = try await fleet {
                $0.userMaxWaits = 2
                $0.userMaxStreams = 1
                $0.userMaxActiveJobs = 2
                $0.userRate = 1000
            }
            let (a, b, c) = (gateways[0], gateways[1], gateways[2])
            let owner = "fleet-holds-\(UUID())"
            let token = a.token(owner)

            // A download (ready at once: not an active job), then active jobs: one created on A,
            // one on B, the third refused by C.
            let client = try a.configuration.makeS3Client()
            let key = "fleet-\(UUID()).bin"
            _ = try await client.putObject(key: "private/\(owner)/\(key)", body: .bytes(repeatingBytes(24 << 20, seed: 9)))
            let download = try await c.request(
                "POST", "/v1/jobs", token: token, json: ["type": "download", "source": ["accessLevel": "private", "key": key]])
            #expect(download.status == 201, "\(download.json)")
            var jobs: [String] = []
            for gateway in [a, b] {
                let answer = try await uploadJob(gateway, token)
                jobs.append(try #require(answer.json["id"] as? String, "\(answer.json)"))
            }
            let third = try await uploadJob(c, token)
            #expect(third.status == 429 && third.json["code"] as? String == "quota_exceeded", "\(third.json)")

            // Waits: two long polls held on A and B; C refuses a third.
            func poll(_ gateway: LiveGateway) throws -> LoopbackClient {
                let held = try LoopbackClient(port: gateway.port)
                try held.send("GET /v1/jobs/\(jobs[0])?wait=60 HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer \(token)\r\n\r\n")
                return held
            }
            func waitsOpen(_ gateway: LiveGateway) async throws -> Int {
                let text = String(decoding: try await gateway.request("GET", "/metrics").body, as: UTF8.self)
                return text.split(separator: "\n").first { $0.hasPrefix("gateway_waits_open ") }.flatMap {
                    Int($0.split(separator: " ")[1])
                } ?? -1
            }
            var heldOnA: LoopbackClient? = try poll(a)
            let heldOnB = try poll(b)
            #expect(
                try await waitUntil(10) {
                    let onA = try await waitsOpen(a), onB = try await waitsOpen(b)
                    return onA == 1 && onB == 1
                })
            let thirdWait = try await c.request("GET", "/v1/jobs/\(jobs[0])?wait=1", token: token)
            #expect(
                thirdWait.status == 429 && thirdWait.json["code"] as? String == "quota_exceeded", "\(thirdWait.status) \(thirdWait.json)")
            // A's poller hangs up: its hold is given back, and C serves the next poll.
            heldOnA = nil
            #expect(try await waitUntil(10) { try await waitsOpen(a) == 0 })
            let freed = try await c.request("GET", "/v1/jobs/\(jobs[0])?wait=1", token: token)
            #expect(freed.status == 200, "\(freed.status) \(freed.json)")
            _ = heldOnA
            _ = heldOnB

            // Data streams: the link made on C, held unread on A; B refuses a second stream, and
            // serves it (its signature checked with the key every instance shares) once A's is gone.
            let link = try #require(download.json["dataUrl"] as? String)
            let path = String(link.drop { $0 != "/" }.dropFirst(2).drop { $0 != "/" })
            var reader: LoopbackClient? = try LoopbackClient(port: a.port, receiveBuffer: 4096)
            try reader?.send("GET \(path) HTTP/1.1\r\nHost: t\r\n\r\n")
            let head = try reader?.readHead(deadline: Date().addingTimeInterval(10))
            #expect(head?.status == 200)
            let second = try await b.request("GET", path)
            #expect(second.status == 429, "\(second.status) \(second.json)")
            reader = nil
            var served = 0
            #expect(
                try await waitUntil(10) {
                    served = try await b.request("GET", path).status
                    return served == 200
                }, "B answered \(served) once A's reader hung up")
            _ = reader
            try await stop(gateways)
        }

        /// Two instances whose GATEWAY_USER_RATE differ: each names `config_mismatch` in
        /// `/readyz` (still 200: readiness is not taken away from a whole fleet mid-rollout), and
        /// `GET /v1/admin/instances` lists both for an admin, with what differs; others get 403.
        @Test func instancesThatDisagreeAreNamed() async throws {
            let url = try Configuration.fromEnvironment(ProcessInfo.processInfo.environment).databaseURL ?? ""
            let (_, deployment) = try await GatewayApp.prepareDatabase(databaseURL: url)
            let a = try LiveGateway(deployment: deployment) { $0.linkSecret = nil }
            let b = try LiveGateway(deployment: deployment) {
                $0.linkSecret = nil
                $0.userRate = 77
            }
            let fleetA = try #require(a.app.fleet), fleetB = try #require(b.app.fleet)
            try await fleetA.beat()
            try await fleetB.beat()
            var ready: LiveGateway.Answer?
            #expect(
                try await waitUntil(5) {
                    ready = try await a.request("GET", "/readyz")
                    return ((ready?.json["checks"] as? [String: Any])?["fleet"] as? String)?.contains("config_mismatch") == true
                })
            let fleetCheck = (ready?.json["checks"] as? [String: Any])?["fleet"] as? String ?? ""
            #expect(ready?.status == 200 && fleetCheck.contains("GATEWAY_USER_RATE"), "\(ready?.status ?? 0) \(fleetCheck)")
            #expect(!fleetCheck.contains("GATEWAY_JWT_SECRET"), "settings that agree are not named: \(fleetCheck)")

            let admin = a.token("operator", roles: ["admin"])
            let listed = try await a.request("GET", "/v1/admin/instances", token: admin)
            #expect(listed.status == 200)
            let instances = listed.json["instances"] as? [[String: Any]] ?? []
            let byID = Dictionary(instances.compactMap { item in (item["id"] as? String).map { ($0, item) } }) { first, _ in first }
            let bListed = try #require(byID[fleetB.current.id], "\(instances.map { $0["id"] ?? "" })")
            #expect(bListed["live"] as? Bool == true && bListed["schemaVersion"] as? Int == Schema.latestVersion)
            #expect((bListed["mismatch"] as? [String]) == ["GATEWAY_USER_RATE"])
            #expect((byID[fleetA.current.id]?["mismatch"] as? [String]) == [])
            #expect(byID[fleetA.current.id]?["current"] as? Bool == true)
            #expect(!String(decoding: listed.body, as: UTF8.self).contains(a.configuration.jwtSecret ?? "-"))
            #expect(try await a.request("GET", "/v1/admin/instances", token: a.token("someone")).status == 403)

            // B leaves (SIGTERM): it is no longer listed as live.
            await fleetB.leave()
            let after = try await a.request("GET", "/v1/admin/instances", token: admin)
            let ids = (after.json["instances"] as? [[String: Any]] ?? []).compactMap { $0["id"] as? String }
            #expect(!ids.contains(fleetB.current.id) && ids.contains(fleetA.current.id))
            await fleetA.leave()
            await a.stop()
            await b.stop()
        }

        /// A hold whose release never reached the database (its row stayed) is swept while its
        /// instance lives; holds still held are not.
        @Test func aHoldWhoseReleaseWasLostIsSwept() async throws {
            let gateway = try LiveGateway()
            let fleet = try #require(gateway.app.fleet)
            try await fleet.beat()
            let owner = "fleet-sweep-\(UUID())"
            let kept = try #require(try await fleet.hold(.wait, for: owner, limit: 5))
            let pool = try PostgresPoolFor.live()
            try await pool.withConnection {
                try $0.query(
                    """
                    INSERT INTO identity_holds (identity, kind, instance_id, created_at)
                    VALUES (\(owner), 'wait', \(fleet.current.id), clock_timestamp() - interval '1 minute')
                    """)
            }
            func count() async throws -> Int {
                try await pool.withConnection {
                    try $0.query("SELECT count(*)::int AS n FROM identity_holds WHERE identity = \(owner)").first?.int("n") ?? -1
                }
            }
            #expect(try await count() == 2)
            try await fleet.sweep()
            #expect(try await count() == 1, "the stray row went, the live hold stayed")
            await fleet.release(kept)
            #expect(try await count() == 0)
            await fleet.leave()
            await gateway.stop()
        }

        /// `migrate` makes the link secret once: a second run keeps it, and instances built on it
        /// agree on every link.
        @Test func migrateMakesOneLinkSecretForTheDeployment() async throws {
            let url = try Configuration.fromEnvironment(ProcessInfo.processInfo.environment).databaseURL ?? ""
            let first = try await GatewayApp.prepareDatabase(databaseURL: url).deployment
            let second = try await GatewayApp.prepareDatabase(databaseURL: url).deployment
            let secret = try #require(first.linkSecret)
            #expect(secret.utf8.count >= 32 && second.linkSecret == secret)
            #expect(first.schemaVersion == Schema.latestVersion)
        }

        /// A database whose schema is newer than this binary (a later release migrated it): the
        /// start is refused, naming both versions. In a PostgreSQL schema of its own (the sessions'
        /// search_path), made and dropped here.
        @Test func aSchemaNewerThanTheBinaryIsRefused() async throws {
            let url = try Configuration.fromEnvironment(ProcessInfo.processInfo.environment).databaseURL ?? ""
            let name = "gateway_schema_\(UInt32.random(in: 0...UInt32.max))"
            let admin = try PostgresPoolFor.live()
            try await admin.withConnection { _ = try $0.query(SQL(stringLiteral: "CREATE SCHEMA \(name)")) }
            let pool = PostgresPool(url: url, size: 1, settings: [("search_path", name)])
            _ = try await GatewayApp.prepareDatabase(using: pool)
            try await pool.withConnection {
                try $0.query("INSERT INTO schema_migrations (version, name) VALUES (\(Schema.latestVersion + 1), 'from a later release')")
            }
            await #expect {
                _ = try await GatewayApp.prepareDatabase(using: pool)
            } throws: { error in
                (error as? GatewayApp.SchemaTooNew)?.database == Schema.latestVersion + 1
            }
            try await admin.withConnection { _ = try $0.query(SQL(stringLiteral: "DROP SCHEMA \(name) CASCADE")) }
            // The shared schema is untouched.
            #expect(try await GatewayApp.prepareDatabase(databaseURL: url).deployment.schemaVersion == Schema.latestVersion)
        }

        func waitUntil(_ timeout: Double, _ condition: () async throws -> Bool) async throws -> Bool {
            let deadline = Date().addingTimeInterval(timeout)
            while Date() < deadline {
                if try await condition() { return true }
                try await Task.sleep(for: .milliseconds(50))
            }
            return false
        }
    }
}

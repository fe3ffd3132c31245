import Auth
import Crypto
import Foundation
import Postgres
import S3
import Testing

@testable import Adapters
@testable import Gateway
@testable import TransferGateway

/// Two gateway processes on one database: a stalled instance (SIGSTOP past its lease, then
/// SIGCONT) cannot overwrite the new owner's progress; SIGTERM hands jobs back at once; many
/// queued jobs are drained with each run by one instance only (audited by claim counts).
extension JobTableTests {
    @Suite struct ScaleOutLiveTests {
        typealias GatewayProcess = CrashResumeLiveTests.GatewayProcess

        struct Setup {
            let environment: [String: String]
            let configuration: Configuration
            let pool: PostgresPool
            let client: S3Client
            let token: String
        }

        func setup() async throws -> Setup {
            let environment = ProcessInfo.processInfo.environment
            let configuration = try Configuration.fromEnvironment(environment)
            let pool = try PostgresPoolFor.live()
            try await JobTableTests.retireLeftovers(pool)
            return Setup(
                environment: environment, configuration: configuration, pool: pool,
                client: try configuration.makeS3Client(), token: TokenMinter.hs256Token(configuration, subject: "alice"))
        }

        func source(_ s: Setup, _ folder: String, mebibytes: Int) async throws -> [UInt8] {
            var bytes = [UInt8](repeating: 0, count: mebibytes << 20)
            for i in stride(from: 0, to: bytes.count, by: 4096) { bytes[i] = UInt8(truncatingIfNeeded: (i >> 12) &* 3) }
            _ = try await s.client.putObject(key: "private/alice/\(folder)/src.bin", body: .bytes(bytes))
            return bytes
        }

        func lease(_ s: Setup, _ id: String) async throws -> (owner: String?, parts: Int, state: String) {
            try await s.pool.withConnection { connection in
                let row = try connection.query(
                    """
                    SELECT lease_owner, state, (SELECT count(*) FROM job_parts WHERE job_id = jobs.id) AS parts
                    FROM jobs WHERE id = \(id)::uuid
                    """)[0]
                return (try row.optionalString("lease_owner"), try row.int("parts"), try row.string("state"))
            }
        }

        /// The instance holding the job's lease once two parts are recorded (bounded wait).
        func ownerOnceRunning(_ s: Setup, _ id: String) async throws -> String? {
            var owner: String?
            #expect(
                try await waitUntil(30) {
                    let l = try await lease(s, id)
                    owner = l.owner
                    return l.parts >= 2 && l.owner != nil
                }, "the job never got going")
            return owner
        }

        func waitUntil(_ timeout: Double, _ condition: () async throws -> Bool) async throws -> Bool {
            let deadline = Date().addingTimeInterval(timeout)
            while Date() < deadline {
                if try await condition() { return true }
                try await Task.sleep(for: .milliseconds(20))
            }
            return false
        }

        func createCopy(_ s: Setup, port: Int, _ folder: String) async throws -> String {
            let created = try await HTTP.json(
                "POST", port: port, path: "/v1/jobs", token: s.token,
                body: [
                    "type": "copy", "concurrency": 1, "bandwidthLimit": 10 << 20,
                    "source": ["accessLevel": "private", "key": "\(folder)/src.bin"],
                    "destination": ["accessLevel": "private", "key": "\(folder)/dst.bin"],
                ])
            return try #require(created["id"] as? String, "\(created)")
        }

        func finalJob(_ s: Setup, port: Int, _ id: String) async throws -> [String: Any] {
            var job: [String: Any] = [:]
            let deadline = Date().addingTimeInterval(90)
            while !["completed", "failed", "canceled"].contains(job["state"] as? String ?? "") && Date() < deadline {
                job = try await HTTP.json("GET", port: port, path: "/v1/jobs/\(id)?wait=5", token: s.token, body: nil)
            }
            return job
        }

        @Test func aStalledInstanceCannotOverwriteTheNewOwner() async throws {
            let s = try await setup()
            let folder = "stall-\(UUID().uuidString)"
            let bytes = try await source(s, folder, mebibytes: 60)
            let a = try GatewayProcess(environment: s.environment)
            let b = try GatewayProcess(environment: s.environment)
            let id = try await createCopy(s, port: a.port, folder)
            let owner = try await ownerOnceRunning(s, id)
            let stalled = a.owns(owner) ? a : b
            let other = stalled === a ? b : a
            stalled.signal(SIGSTOP)
            // Past the 2 s lease the other instance takes the job over.
            #expect(try await waitUntil(20) { other.owns(try await lease(s, id).owner) }, "the job was not taken over")
            stalled.signal(SIGCONT)
            let job = try await finalJob(s, port: other.port, id)
            #expect(job["state"] as? String == "completed", "\(job)")
            #expect(job["partsCompleted"] as? Int == 12 && job["bytesCommitted"] as? Int == bytes.count, "\(job)")
            #expect(job["attempts"] as? Int == 2, "claimed \(job["attempts"] ?? "?") times")
            let copied = try await s.client.getObject(key: "private/alice/\(folder)/dst.bin", sink: .memory(limit: 128 << 20)).body
            #expect(Digest.sha256(copied) == Digest.sha256(bytes))
            #expect(try await s.client.listMultipartUploads(prefix: "private/alice/\(folder)/").isEmpty)
            a.kill()
            b.kill()
        }

        @Test func sigtermHandsTheJobBackAtOnce() async throws {
            let s = try await setup()
            let folder = "term-\(UUID().uuidString)"
            let bytes = try await source(s, folder, mebibytes: 60)
            // A 30 s lease: a takeover sooner than that can only come from the lease being released.
            let a = try GatewayProcess(environment: s.environment, leaseSeconds: 30)
            let b = try GatewayProcess(environment: s.environment, leaseSeconds: 30)
            let id = try await createCopy(s, port: a.port, folder)
            let owner = try await ownerOnceRunning(s, id)
            let leaving = a.owns(owner) ? a : b
            let staying = leaving === a ? b : a
            let signalled = Date()
            leaving.signal(SIGTERM)
            #expect(try await waitUntil(10) { staying.owns(try await lease(s, id).owner) }, "the job was not handed over")
            let handover = Date().timeIntervalSince(signalled)
            #expect(handover < 5, "took \(handover) s; the lease is 30 s")
            print("sigterm handover: \(String(format: "%.2f", handover)) s")
            leaving.process.waitUntilExit()
            #expect(leaving.process.terminationStatus == 0, "SIGTERM is a clean exit")
            let job = try await finalJob(s, port: staying.port, id)
            #expect(job["state"] as? String == "completed", "\(job)")
            let copied = try await s.client.getObject(key: "private/alice/\(folder)/dst.bin", sink: .memory(limit: 128 << 20)).body
            #expect(Digest.sha256(copied) == Digest.sha256(bytes))
            staying.kill()
        }

        /// `GATEWAY_DRAIN_JOBS` jobs (200 here; scripts/drain.sh runs 1,000) queued at once and drained
        /// by two instances: every one completes, and each was claimed exactly once.
        @Test func twoInstancesDrainQueuedJobsEachClaimedOnce() async throws {
            let s = try await setup()
            let count = Int(s.environment["GATEWAY_DRAIN_JOBS"] ?? "") ?? 200
            let folder = "drain-\(UUID().uuidString)"
            _ = try await s.client.putObject(key: "private/alice/\(folder)/src.bin", body: .bytes(Array("drain me".utf8)))
            // Queued before any instance runs, so both start with the whole backlog.
            try await s.pool.withConnection { connection in
                for n in 0..<count {
                    let id = UUID().uuidString.lowercased()
                    try connection.query(
                        """
                        INSERT INTO jobs (id, owner, type, state, object_key, source, part_size)
                        VALUES (\(id)::uuid, 'alice', 'copy', 'queued', \("private/alice/\(folder)/dst-\(n).bin"),
                                \(#"{"key":"private/alice/"# + folder + #"/src.bin"}"#)::jsonb, 5242880)
                        """)
                }
            }
            let started = Date()
            let a = try GatewayProcess(environment: s.environment)
            let b = try GatewayProcess(environment: s.environment)
            #expect(
                try await waitUntil(600) {
                    try await s.pool.withConnection { connection in
                        try connection.query(
                            "SELECT count(*) AS n FROM jobs WHERE object_key LIKE \("private/alice/\(folder)/%") AND state IN ('queued', 'running')"
                        )[0].int("n")
                    } == 0
                })
            let elapsed = Date().timeIntervalSince(started)
            let audit = try await s.pool.withConnection { connection in
                try connection.query(
                    """
                    SELECT state, attempts, count(*) AS n FROM jobs WHERE object_key LIKE \("private/alice/\(folder)/%")
                    GROUP BY state, attempts
                    """
                ).map { "\(try $0.string("state"))×\(try $0.int("attempts")): \(try $0.int("n"))" }
            }
            #expect(audit == ["completed×1: \(count)"], "\(audit)")
            print("drain: \(count) jobs by two instances in \(String(format: "%.1f", elapsed)) s; \(audit)")
            for n in [0, count / 2, count - 1] {
                #expect(try await s.client.headObject(key: "private/alice/\(folder)/dst-\(n).bin").size == 8)
            }
            a.kill()
            b.kill()
        }
        /// `GATEWAY_KILL_CAMPAIGN` SIGKILLs (scripts/reliability.sh kills: 50) of whichever instance
        /// holds a lease, at random moments, each victim restarted at once, while copy jobs run:
        /// every job completes exactly once, byte-identical, and no multipart upload is left.
        @Test(.enabled(if: ProcessInfo.processInfo.environment["GATEWAY_KILL_CAMPAIGN"] != nil, "scripts/reliability.sh kills"))
        func randomKillsLoseNothing() async throws {
            let s = try await setup()
            let kills = Int(s.environment["GATEWAY_KILL_CAMPAIGN"] ?? "") ?? 50
            let jobs = 12
            let folder = "kills-\(UUID().uuidString)"
            let bytes = try await source(s, folder, mebibytes: 30)
            var instances = [try GatewayProcess(environment: s.environment), try GatewayProcess(environment: s.environment)]
            var ids: [String] = []
            for n in 0..<jobs {
                let created = try await HTTP.json(
                    "POST", port: instances[0].port, path: "/v1/jobs", token: s.token,
                    body: [
                        "type": "copy", "concurrency": 2, "bandwidthLimit": 4 << 20,
                        "source": ["accessLevel": "private", "key": "\(folder)/src.bin"],
                        "destination": ["accessLevel": "private", "key": "\(folder)/dst-\(n).bin"],
                    ])
                ids.append(try #require(created["id"] as? String))
            }
            var landed = 0
            for _ in 0..<kills {
                try await Task.sleep(for: .milliseconds(Int.random(in: 100...1200)))
                let owners = try await s.pool.withConnection { connection in
                    try connection.query("SELECT lease_owner FROM jobs WHERE state = 'running' AND lease_owner IS NOT NULL")
                        .compactMap { try $0.optionalString("lease_owner") }
                }
                let holders = instances.indices.filter { i in owners.contains { instances[i].owns($0) } }
                let victim = holders.randomElement() ?? Int.random(in: 0..<2)
                if !holders.isEmpty { landed += 1 }
                instances[victim].kill()
                instances[victim] = try GatewayProcess(environment: s.environment)
            }
            #expect(
                try await waitUntil(600) {
                    try await s.pool.withConnection { connection in
                        try connection.query(
                            "SELECT count(*) AS n FROM jobs WHERE object_key LIKE \("private/alice/\(folder)/%") AND state <> 'completed'")[
                                0
                            ].int("n")
                    } == 0
                }, "not every job completed")
            var verified = 0
            for n in 0..<jobs {
                let copied = try await s.client.getObject(key: "private/alice/\(folder)/dst-\(n).bin", sink: .memory(limit: 64 << 20)).body
                if Digest.sha256(copied) == Digest.sha256(bytes) { verified += 1 }
            }
            #expect(verified == jobs)
            let leaked = try await s.client.listMultipartUploads(prefix: "private/alice/\(folder)/").count
            #expect(leaked == 0)
            print(
                "kills: \(kills) SIGKILLs (\(landed) of an instance holding a lease), \(jobs) jobs completed, \(verified) byte-identical, \(leaked) uploads leaked"
            )
            for instance in instances { instance.kill() }
        }
    }
}

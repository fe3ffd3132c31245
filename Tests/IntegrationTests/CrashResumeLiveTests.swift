import Auth
import Crypto
import Foundation
import Postgres
import S3
import SigV4
import Testing

@testable import Adapters
@testable import Gateway
@testable import TransferGateway

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Two real gateway processes on one database: SIGKILL the one running a copy job; the other
/// takes the job over when the lease lapses and finishes it byte-identical.
extension JobTableTests {
    @Suite struct CrashResumeLiveTests {
        /// A `transfer-gateway serve` child process with its own port.
        final class GatewayProcess {
            let process = Process()
            let port: Int

            init(environment: [String: String], leaseSeconds: Int = 2) throws {
                let binary = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
                    .appendingPathComponent("../../.build/debug/transfer-gateway").standardizedFileURL
                process.executableURL = binary
                process.arguments = ["serve"]
                var env = environment
                env["GATEWAY_PORT"] = "0"
                env["GATEWAY_LEASE_SECONDS"] = String(leaseSeconds)
                process.environment = env
                let errors = Pipe()
                process.standardError = errors
                process.standardOutput = FileHandle.nullDevice
                try process.run()
                // The first lines name the port ("listening"); read until then (bounded).
                var found: Int?
                var text = ""
                let deadline = Date().addingTimeInterval(20)
                while found == nil && Date() < deadline {
                    let chunk = errors.fileHandleForReading.availableData
                    if chunk.isEmpty { break }
                    text += String(decoding: chunk, as: UTF8.self)
                    if let range = text.range(of: #""port":"#) {
                        found = Int(text[range.upperBound...].prefix { $0.isNumber })
                    }
                }
                guard let found else { process.terminate(); throw CocoaError(.fileReadUnknown) }
                port = found
                // Keep draining stderr so the child never blocks on a full pipe.
                drainOnThread(errors.fileHandleForReading)
            }

            func kill() {
                signal(SIGKILL)
                process.waitUntilExit()
            }

            func signal(_ number: Int32) {
                Foundation.kill(process.processIdentifier, number)
            }

            /// Whether `leaseOwner` (an instance name: host-pid-random) is this process.
            func owns(_ leaseOwner: String?) -> Bool {
                leaseOwner?.contains("-\(process.processIdentifier)-") ?? false
            }

            deinit {
                if process.isRunning { kill() }
            }
        }

        @Test func killingTheInstanceRunningAJobLetsTheOtherFinishIt() async throws {
            let environment = ProcessInfo.processInfo.environment
            let configuration = try Configuration.fromEnvironment(environment)
            let pool = try PostgresPoolFor.live()
            try await JobTableTests.retireLeftovers(pool)
            let client = try configuration.makeS3Client()
            let folder = "crash-\(UUID().uuidString)"
            var bytes = [UInt8](repeating: 0, count: 60 << 20)
            for i in stride(from: 0, to: bytes.count, by: 1 << 16) { bytes[i] = UInt8(truncatingIfNeeded: (i >> 16) &* 7) }
            _ = try await client.putObject(key: "private/alice/\(folder)/src.bin", body: .bytes(bytes))

            let a = try GatewayProcess(environment: environment)
            let b = try GatewayProcess(environment: environment)
            let token = TokenMinter.hs256Token(configuration, subject: "alice")
            let created = try await HTTP.json(
                "POST", port: a.port, path: "/v1/jobs", token: token,
                body: [
                    // 10 MiB/s: 12 parts take ~6 s, so the kill lands mid-job however loaded the machine is.
                    "type": "copy", "concurrency": 1, "bandwidthLimit": 10 << 20,
                    "source": ["accessLevel": "private", "key": "\(folder)/src.bin"],
                    "destination": ["accessLevel": "private", "key": "\(folder)/dst.bin"],
                ])
            let id = try #require(created["id"] as? String)

            // Wait until some parts are recorded, then kill whichever instance holds the lease.
            var owner: String?
            let deadline = Date().addingTimeInterval(30)
            while Date() < deadline {
                let rows = try await pool.withConnection { connection in
                    try connection.query(
                        "SELECT lease_owner, (SELECT count(*) FROM job_parts WHERE job_id = jobs.id) AS parts FROM jobs WHERE id = \(id)::uuid"
                    )
                    .map { (try $0.optionalString("lease_owner"), try $0.int("parts")) }
                }
                if let row = rows.first, row.1 >= 3, let lease = row.0 { owner = lease; break }
                try await Task.sleep(for: .milliseconds(20))
            }
            let leaseOwner = try #require(owner, "the job never got going")
            let victim = leaseOwner.contains("-\(a.process.processIdentifier)-") ? a : b
            let survivor = victim === a ? b : a
            let partsBefore = try await pool.withConnection {
                try $0.query("SELECT count(*) AS n FROM job_parts WHERE job_id = \(id)::uuid")[0].int("n")
            }
            victim.kill()

            // The survivor takes the job over after the 2 s lease and finishes it.
            var state = ""
            var final: [String: Any] = [:]
            let finishBy = Date().addingTimeInterval(60)
            while !["completed", "failed", "canceled"].contains(state) && Date() < finishBy {
                final = try await HTTP.json("GET", port: survivor.port, path: "/v1/jobs/\(id)?wait=5", token: token, body: nil)
                state = final["state"] as? String ?? ""
            }
            #expect(state == "completed", "\(final)")
            #expect((final["attempts"] as? Int ?? 0) >= 2, "the job was not taken over")
            #expect(partsBefore >= 3)
            let copied = try await client.getObject(key: "private/alice/\(folder)/dst.bin", sink: .memory(limit: 128 << 20)).body
            #expect(Digest.sha256(copied) == Digest.sha256(bytes))
            #expect(try await client.listMultipartUploads(prefix: "private/alice/\(folder)/").isEmpty)
            survivor.kill()
        }

        /// One instance, killed mid-job and started again: the new process resumes the job from
        /// its recorded parts once the lease lapses, and the object is byte-identical.
        @Test func aGatewayKilledMidJobAndStartedAgainFinishesIt() async throws {
            let environment = ProcessInfo.processInfo.environment
            let configuration = try Configuration.fromEnvironment(environment)
            let pool = try PostgresPoolFor.live()
            try await JobTableTests.retireLeftovers(pool)
            let client = try configuration.makeS3Client()
            let folder = "restart-\(UUID().uuidString)"
            var bytes = [UInt8](repeating: 0, count: 100 << 20)
            for i in stride(from: 0, to: bytes.count, by: 1 << 12) { bytes[i] = UInt8(truncatingIfNeeded: (i >> 12) &* 5) }
            _ = try await client.putObject(key: "private/alice/\(folder)/src.bin", body: .bytes(bytes))

            let first = try GatewayProcess(environment: environment)
            let token = TokenMinter.hs256Token(configuration, subject: "alice")
            let created = try await HTTP.json(
                "POST", port: first.port, path: "/v1/jobs", token: token,
                body: [
                    "type": "copy", "concurrency": 2, "bandwidthLimit": 20 << 20,
                    "source": ["accessLevel": "private", "key": "\(folder)/src.bin"],
                    "destination": ["accessLevel": "private", "key": "\(folder)/dst.bin"],
                ])
            let id = try #require(created["id"] as? String)
            var parts = 0
            let deadline = Date().addingTimeInterval(30)
            while parts < 3 && Date() < deadline {
                parts = try await pool.withConnection {
                    try $0.query("SELECT count(*) AS n FROM job_parts WHERE job_id = \(id)::uuid")[0].int("n")
                }
                try await Task.sleep(for: .milliseconds(20))
            }
            first.kill()
            #expect(parts >= 3 && parts < 20, "the kill did not land mid-job (\(parts) parts)")

            let second = try GatewayProcess(environment: environment)
            var final: [String: Any] = [:]
            let finishBy = Date().addingTimeInterval(90)
            while !["completed", "failed", "canceled"].contains(final["state"] as? String ?? "") && Date() < finishBy {
                final = try await HTTP.json("GET", port: second.port, path: "/v1/jobs/\(id)?wait=5", token: token, body: nil)
            }
            #expect(final["state"] as? String == "completed", "\(final)")
            #expect(final["partsCompleted"] as? Int == 20)
            let copied = try await client.getObject(key: "private/alice/\(folder)/dst.bin", sink: .memory(limit: 128 << 20)).body
            #expect(Digest.sha256(copied) == Digest.sha256(bytes))
            #expect(try await client.listMultipartUploads(prefix: "private/alice/\(folder)/").isEmpty)
            second.kill()
        }
    }
}

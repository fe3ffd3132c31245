import Crypto
import Foundation
import Postgres
import S3
import SigV4
import Testing

@testable import Adapters
@testable import Gateway
@testable import TransferGateway

/// Pause, resume and cancel reach a running copy job.
extension JobTableTests {
    @Suite struct JobControlLiveTests {
        struct Setup {
            let gateway: LiveGateway
            let client: S3Client
            let token: String
            let folder: String
        }

        func setup(sourceMiB: Int) async throws -> (Setup, [UInt8]) {
            let gateway = try LiveGateway { $0.leaseSeconds = 2 }  // ticks every ~333 ms
            try await JobTableTests.retireLeftovers(PostgresPoolFor.live())
            gateway.app.worker?.start()
            let c = gateway.configuration
            let client = try c.makeS3Client()
            let folder = "ctl-\(UUID().uuidString)"
            var bytes = [UInt8](repeating: 0, count: sourceMiB << 20)
            for i in stride(from: 0, to: bytes.count, by: 1 << 16) { bytes[i] = UInt8(truncatingIfNeeded: i >> 16) }
            _ = try await client.putObject(key: "private/alice/\(folder)/src.bin", body: .bytes(bytes))
            return (Setup(gateway: gateway, client: client, token: gateway.token("alice"), folder: folder), bytes)
        }

        func createCopy(_ s: Setup) async throws -> String {
            let created = try await s.gateway.request(
                "POST", "/v1/jobs", token: s.token,
                json: [
                    // 10 MiB/s: the 60 MiB copy takes ~6 s, so pause and cancel land mid-job.
                    "type": "copy", "concurrency": 1, "bandwidthLimit": 10 << 20,
                    "source": ["accessLevel": "private", "key": "\(s.folder)/src.bin"],
                    "destination": ["accessLevel": "private", "key": "\(s.folder)/dst.bin"],
                ])
            return try #require(created.json["id"] as? String)
        }

        func job(_ s: Setup, _ id: String) async throws -> [String: Any] {
            try await s.gateway.request("GET", "/v1/jobs/\(id)", token: s.token).json
        }

        /// Polls the job until `condition` holds (bounded).
        func waitFor(_ s: Setup, _ id: String, timeout: Double = 30, _ condition: ([String: Any]) -> Bool) async throws -> [String: Any] {
            let deadline = Date().addingTimeInterval(timeout)
            var current = try await job(s, id)
            while !condition(current) && Date() < deadline {
                try await Task.sleep(for: .milliseconds(20))
                current = try await job(s, id)
            }
            return current
        }

        @Test func pauseHoldsProgressStillAndResumeFinishes() async throws {
            let (s, bytes) = try await setup(sourceMiB: 60)
            let id = try await createCopy(s)
            _ = try await waitFor(s, id) { ($0["partsCompleted"] as? Int ?? 0) >= 1 }
            let paused = try await s.gateway.request("POST", "/v1/jobs/\(id)/pause", token: s.token)
            #expect(paused.json["state"] as? String == "paused")
            // Give the runner a tick to notice, then watch that nothing moves for a second.
            try await Task.sleep(for: .milliseconds(700))
            let before = try await job(s, id)
            try await Task.sleep(for: .milliseconds(1000))
            let after = try await job(s, id)
            #expect(before["state"] as? String == "paused")
            #expect(before["bytesTransferred"] as? Int == after["bytesTransferred"] as? Int, "bytes moved while paused")
            #expect((before["partsCompleted"] as? Int ?? 0) < 12, "the job finished before the pause: nothing was tested")
            #expect(try await s.gateway.request("POST", "/v1/jobs/\(id)/pause", token: s.token).status == 200, "pause is idempotent")
            let resumed = try await s.gateway.request("POST", "/v1/jobs/\(id)/resume", token: s.token)
            #expect(resumed.json["state"] as? String == "queued")
            let done = try await waitFor(s, id, timeout: 60) { ["completed", "failed"].contains($0["state"] as? String ?? "") }
            #expect(done["state"] as? String == "completed", "\(done)")
            let copied = try await s.client.getObject(key: "private/alice/\(s.folder)/dst.bin", sink: .memory(limit: 128 << 20)).body
            #expect(Digest.sha256(copied) == Digest.sha256(bytes))
            await s.gateway.app.worker?.stop()
            await s.gateway.stop()
        }

        @Test func cancelLeavesNoUploadBehind() async throws {
            let (s, _) = try await setup(sourceMiB: 60)
            let id = try await createCopy(s)
            _ = try await waitFor(s, id) { ($0["partsCompleted"] as? Int ?? 0) >= 1 }
            let canceled = try await s.gateway.request("POST", "/v1/jobs/\(id)/cancel", token: s.token)
            #expect(canceled.json["state"] as? String == "canceled")
            // The runner aborts the upload at its next tick or part; poll the bucket (bounded).
            let deadline = Date().addingTimeInterval(10)
            var open = try await s.client.listMultipartUploads(prefix: "private/alice/\(s.folder)/")
            while !open.isEmpty && Date() < deadline {
                try await Task.sleep(for: .milliseconds(50))
                open = try await s.client.listMultipartUploads(prefix: "private/alice/\(s.folder)/")
            }
            #expect(open.isEmpty, "the canceled job's upload is still open")
            #expect((try await job(s, id))["state"] as? String == "canceled")
            #expect(try await s.gateway.request("POST", "/v1/jobs/\(id)/cancel", token: s.token).status == 200, "cancel is idempotent")
            await s.gateway.app.worker?.stop()
            await s.gateway.stop()
        }
    }
}

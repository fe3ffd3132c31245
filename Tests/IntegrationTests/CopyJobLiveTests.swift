import Crypto
import Foundation
import Postgres
import S3
import SigV4
import Testing
import TransferEngine

@testable import Adapters
@testable import Gateway
@testable import TransferGateway

/// The copy job end to end against the real PostgreSQL and SeaweedFS.
extension JobTableTests {
    @Suite struct CopyJobLiveTests {
        struct Parts {
            let store: PostgresJobStore
            let pool: PostgresPool
            let client: S3Client
        }

        func parts() async throws -> Parts {
            let c = try Configuration.fromEnvironment(liveEnvironment)
            let url = try #require(c.databaseURL)
            _ = try await GatewayApp.migrate(databaseURL: url)
            let pool = PostgresPool(url: url, size: 4)
            try await JobTableTests.retireLeftovers(pool)
            let client = try c.makeS3Client()
            return Parts(store: PostgresJobStore(pool: pool), pool: pool, client: client)
        }

        func claim(_ store: PostgresJobStore, _ id: String) async throws -> (Job, Lease) {
            while let (job, lease) = try await store.claim(owner: "copy-test", leaseMilliseconds: 30_000) {
                if job.id == id { return (job, lease) }
                try await store.release(lease)
            }
            throw LeaseLost(jobID: id)
        }

        @Test(arguments: [3 * (5 << 20) + 12345, 1000])
        func copyJobIsByteIdenticalAndLeavesNoUpload(size: Int) async throws {
            let p = try await parts()
            let prefix = "private/alice/copy-\(UUID().uuidString)/"
            var bytes = [UInt8](repeating: 0, count: size)
            for i in stride(from: 0, to: size, by: 4096) { bytes[i] = UInt8(truncatingIfNeeded: i / 4096 &* 31) }
            _ = try await p.client.putObject(key: prefix + "source.bin", body: .bytes(bytes))
            var options = JobOptions()
            options.contentType = "application/x-copied"
            options.concurrency = 3
            let job = Job(
                id: UUID().uuidString.lowercased(), owner: "alice", kind: .copy, state: .queued,
                objectKey: prefix + "copy.bin", source: .object(ObjectSource(key: prefix + "source.bin")),
                options: options, bytesTotal: nil, partSize: 5 << 20)
            try await p.store.insert(job)
            let (claimed, lease) = try await claim(p.store, job.id)
            var settings = EngineSettings()
            settings.tickMilliseconds = 100
            let outcome = try await JobRunner(store: p.store, objects: S3ObjectStore(client: p.client), settings: settings)
                .run(claimed, lease: lease)
            guard case .completed(let etag) = outcome else { Issue.record("\(outcome)"); return }
            let copied = try await p.client.getObject(key: prefix + "copy.bin", sink: .memory(limit: 64 << 20)).body
            #expect(Digest.sha256(copied) == Digest.sha256(bytes))
            let head = try await p.client.headObject(key: prefix + "copy.bin")
            #expect(head.etag == etag)
            let final = try #require(try await p.store.job(id: job.id))
            #expect(final.state == .completed && final.bytesCommitted == Int64(size) && final.etag == etag)
            // A source the gateway never summed: the copy is read back from S3 and summed.
            #expect(final.checksum == .crc32c(bytes.withUnsafeBytes { Digest.crc32c($0) }), "\(String(describing: final.checksum))")
            if size > 5 << 20 {
                #expect(final.partsTotal == 4)
                #expect(head.contentType == "application/x-copied")
            }
            #expect(try await p.client.listMultipartUploads(prefix: prefix).isEmpty)
            try await p.pool.withConnection { try $0.query("DELETE FROM jobs WHERE id = \(job.id)::uuid") }
        }

        @Test func aMissingSourceFailsTheJobWithS3sCode() async throws {
            let p = try await parts()
            let prefix = "private/alice/copy-\(UUID().uuidString)/"
            let job = Job(
                id: UUID().uuidString.lowercased(), owner: "alice", kind: .copy, state: .queued,
                objectKey: prefix + "copy.bin", source: .object(ObjectSource(key: prefix + "missing.bin")),
                bytesTotal: nil, partSize: 5 << 20)
            try await p.store.insert(job)
            let (claimed, lease) = try await claim(p.store, job.id)
            let outcome = try await JobRunner(store: p.store, objects: S3ObjectStore(client: p.client), settings: EngineSettings())
                .run(claimed, lease: lease)
            #expect(outcome == .failed(code: .notFound))
            let final = try #require(try await p.store.job(id: job.id))
            #expect(final.state == .failed && final.error == JobFailure(.notFound))
            try await p.pool.withConnection { try $0.query("DELETE FROM jobs WHERE id = \(job.id)::uuid") }
        }
    }
}

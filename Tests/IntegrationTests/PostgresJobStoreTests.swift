import Foundation
import Postgres
import Synchronization
import Testing
import TransferEngine

@testable import Adapters
@testable import Gateway
@testable import TransferGateway

/// The job store against the real PostgreSQL: exclusive claims, leases that lapse and are
/// taken over, and stale workers refused.
extension JobTableTests {
    @Suite struct PostgresJobStoreTests {
        func store() async throws -> (PostgresJobStore, PostgresPool) {
            let url = try #require(try Configuration.fromEnvironment(liveEnvironment).databaseURL)
            _ = try await GatewayApp.migrate(databaseURL: url)
            let pool = PostgresPool(url: url, size: 4)
            try await JobTableTests.retireLeftovers(pool)
            return (PostgresJobStore(pool: pool), pool)
        }

        func newJob(owner: String = "alice", state: Job.State = .queued) -> Job {
            Job(
                id: UUID().uuidString.lowercased(), owner: owner, kind: .copy, state: state, objectKey: "private/alice/x",
                source: .object(ObjectSource(key: "private/alice/y")), bytesTotal: 10 << 20, partSize: 5 << 20)
        }

        func cleanup(_ pool: PostgresPool, _ ids: [String]) async throws {
            for id in ids { try await pool.withConnection { try $0.query("DELETE FROM jobs WHERE id = \(id)::uuid") } }
        }

        /// Claims until nothing is left, returning only the jobs of `ours`.
        func drain(_ store: PostgresJobStore, owner: String, ours: Set<String>) async throws -> [String] {
            var claimed: [String] = []
            while let (job, lease) = try await store.claim(owner: owner, leaseMilliseconds: 60_000) {
                if ours.contains(job.id) {
                    claimed.append(job.id)
                    try await store.finish(lease, state: .completed, etag: "\"e\"", error: nil)
                } else {
                    try await store.release(lease)  // someone else's leftover: give it back
                    break
                }
            }
            return claimed
        }

        /// A job that becomes runnable is announced as `queued` (what wakes idle workers); one
        /// that waits for its client's bytes (`pending`) is not. Notifications arrive in commit
        /// order, so once the pending job's own change is heard, a `queued` for it would have been.
        @Test func aQueuedJobIsAnnouncedAndAPendingOneIsNot() async throws {
            let (store, pool) = try await store()
            let url = try #require(try Configuration.fromEnvironment(liveEnvironment).databaseURL)
            let heard = Mutex<[String]>([])
            let listener = PostgresListener(
                url: url, channel: "gateway_jobs", onNotify: { payload in heard.withLock { $0.append(payload) } }, onReconnect: {})
            listener.start()
            defer { listener.stop() }
            #expect(await Self.within(10) { listener.isConnected })
            let pending = newJob(state: .pending)
            try await store.insert(pending)
            try await pool.withConnection { try $0.query("UPDATE jobs SET version = version + 1 WHERE id = \(pending.id)::uuid") }
            #expect(await Self.within(10) { heard.withLock { $0.contains(pending.id) } })
            #expect(!heard.withLock { $0.contains(JobWorker.queuedSignal) }, "a pending job is not runnable")
            let queued = newJob()
            try await store.insert(queued)
            #expect(await Self.within(10) { heard.withLock { $0.contains(JobWorker.queuedSignal) } })
            try await cleanup(pool, [pending.id, queued.id])
        }

        static func within(_ seconds: Double, _ condition: () -> Bool) async -> Bool {
            for _ in 0..<Int(seconds * 100) {
                if condition() { return true }
                try? await Task.sleep(for: .milliseconds(10))
            }
            return condition()
        }

        @Test func insertAndReadBack() async throws {
            let (store, pool) = try await store()
            let job = newJob()
            try await store.insert(job)
            let read = try #require(try await store.job(id: job.id))
            #expect(read.owner == "alice" && read.kind == .copy && read.state == .queued && read.bytesTotal == 10 << 20)
            #expect(read.version == 1 && read.createdAt > 1_700_000_000_000)
            #expect(try await store.job(id: UUID().uuidString) == nil)
            try await cleanup(pool, [job.id])
        }

        /// Typed values go in and come back as they were; a row whose JSON does not hold what its
        /// type needs is an error that names the job, never default options.
        @Test func typedValuesRoundTripAndAnUnreadableRowIsNamed() async throws {
            let (store, pool) = try await store()
            var options = JobOptions()
            options.partSize = 6 << 20
            options.metadata = ["a": "b"]
            let tus = Job(
                id: UUID().uuidString.lowercased(), owner: "alice", kind: .upload, state: .pending, objectKey: "private/alice/t",
                source: .uploaded(tusMetadata: "key dA=="), options: options, bytesTotal: 1, partSize: 6 << 20)
            let imported = Job(
                id: UUID().uuidString.lowercased(), owner: "alice", kind: .import, state: .queued,
                objectKey: "private/alice/i", source: .url("https://example.com/f"), bytesTotal: nil, partSize: 5 << 20)
            try await store.insert(tus)
            try await store.insert(imported)
            let readTus = try #require(try await store.job(id: tus.id))
            #expect(readTus.source == .uploaded(tusMetadata: "key dA==") && readTus.options == options)
            #expect(try await store.job(id: imported.id)?.source == .url("https://example.com/f"))
            try await pool.withConnection {
                try $0.query("UPDATE jobs SET options = '{\"partSize\": \"big\"}' WHERE id = \(imported.id)::uuid")
            }
            do {
                _ = try await store.job(id: imported.id)
                Issue.record("an unreadable row was read")
            } catch let error as UnreadableJob {
                #expect(error.id == imported.id && error.column == "options")
                #expect(String(describing: error).contains(imported.id))
            }
            try await cleanup(pool, [tus.id, imported.id])
        }

        @Test func twoInstancesNeverClaimTheSameJob() async throws {
            let (store, pool) = try await store()
            let jobs = (0..<30).map { _ in newJob() }
            for job in jobs { try await store.insert(job) }
            let ours = Set(jobs.map(\.id))
            async let a = drain(store, owner: "instance-a", ours: ours)
            async let b = drain(store, owner: "instance-b", ours: ours)
            let (claimedA, claimedB) = try await (a, b)
            #expect(Set(claimedA).isDisjoint(with: claimedB), "a job was claimed twice")
            #expect(Set(claimedA + claimedB) == ours, "every job was claimed")
            try await cleanup(pool, jobs.map(\.id))
        }

        @Test func aLapsedLeaseIsTakenOverAndTheStaleWorkerIsRefused() async throws {
            let (store, pool) = try await store()
            let job = newJob()
            try await store.insert(job)
            var first: Lease?
            while let (claimed, lease) = try await store.claim(owner: "stalled", leaseMilliseconds: 200) {
                if claimed.id == job.id { first = lease; break }
                try await store.release(lease)
            }
            let stale = try #require(first)
            try await store.recordPart(RecordedPart(number: 1, size: 5 << 20, etag: "\"p1\""), under: stale)
            // Poll until the lease lapses and another instance can take the job (bounded).
            var takeover: Lease?
            let deadline = Date().addingTimeInterval(10)
            while takeover == nil && Date() < deadline {
                if let (claimed, lease) = try await store.claim(owner: "successor", leaseMilliseconds: 60_000) {
                    if claimed.id == job.id { takeover = lease } else { try await store.release(lease) }
                } else {
                    try await Task.sleep(for: .milliseconds(50))
                }
            }
            let fresh = try #require(takeover)
            #expect(fresh.token == stale.token + 1)
            await #expect(throws: LeaseLost.self) {
                try await store.recordPart(RecordedPart(number: 2, size: 5 << 20, etag: "\"stale\""), under: stale)
            }
            await #expect(throws: LeaseLost.self) { _ = try await store.renew(stale, leaseMilliseconds: 1000) }
            await #expect(throws: LeaseLost.self) { try await store.finish(stale, state: .completed, etag: nil, error: nil) }
            try await store.recordPart(RecordedPart(number: 2, size: 5 << 20, etag: "\"p2\""), under: fresh)
            #expect(try await store.parts(of: job.id).map(\.etag) == ["\"p1\"", "\"p2\""])
            let progress = try #require(try await store.job(id: job.id))
            #expect(progress.bytesCommitted == 10 << 20 && progress.attempts == 2)
            try await store.finish(fresh, state: .completed, etag: "\"abc-2\"", error: nil)
            let done = try #require(try await store.job(id: job.id))
            #expect(done.state == .completed && done.etag == "\"abc-2\"" && done.completedAt != nil)
            try await cleanup(pool, [job.id])
        }

        @Test func recordingAPartTwiceCountsItsBytesOnce() async throws {
            let (store, pool) = try await store()
            let job = newJob()
            try await store.insert(job)
            var ours: Lease?
            while let (claimed, lease) = try await store.claim(owner: "w", leaseMilliseconds: 60_000) {
                if claimed.id == job.id { ours = lease; break }
                try await store.release(lease)
            }
            let lease = try #require(ours)
            try await store.recordPart(RecordedPart(number: 1, size: 100, etag: "\"a\""), under: lease)
            try await store.recordPart(RecordedPart(number: 1, size: 100, etag: "\"b\""), under: lease)
            #expect(try await store.job(id: job.id)?.bytesCommitted == 100)
            #expect(try await store.parts(of: job.id) == [RecordedPart(number: 1, size: 100, etag: "\"b\"")])
            // Released, it is claimable again at once.
            try await store.release(lease)
            var again = false
            while let (claimed, next) = try await store.claim(owner: "other", leaseMilliseconds: 60_000) {
                if claimed.id == job.id {
                    again = true; try await store.finish(next, state: .failed, etag: nil, error: JobFailure(.internalError)); break
                }
                try await store.release(next)
            }
            #expect(again)
            #expect(try await store.job(id: job.id)?.state == .failed)
            try await cleanup(pool, [job.id])
        }

        /// How an upload checks its parts, and each part's checksum, outlive the worker: another
        /// instance completes the upload with them.
        @Test func anUploadsChecksumAndItsPartsChecksumsAreKept() async throws {
            let (store, pool) = try await store()
            let job = newJob()
            try await store.insert(job)
            #expect(try await store.job(id: job.id)?.partChecksum == nil)
            var ours: Lease?
            while let (claimed, lease) = try await store.claim(owner: "w", leaseMilliseconds: 60_000) {
                if claimed.id == job.id { ours = lease; break }
                try await store.release(lease)
            }
            let lease = try #require(ours)
            try await store.start(
                lease, uploadID: "u-1", partChecksum: .crc32c, partsTotal: 2, partSize: 5 << 20, bytesTotal: 10 << 20,
                sourceETag: nil)
            try await store.recordPart(RecordedPart(number: 2, size: 5 << 20, etag: "\"b\"", checksum: "qn4G2w=="), under: lease)
            try await store.recordPart(RecordedPart(number: 1, size: 5 << 20, etag: "\"a\""), under: lease)
            let read = try #require(try await store.job(id: job.id))
            #expect(read.uploadID == "u-1" && read.partChecksum == .crc32c)
            #expect(
                try await store.parts(of: job.id) == [
                    RecordedPart(number: 1, size: 5 << 20, etag: "\"a\""),
                    RecordedPart(number: 2, size: 5 << 20, etag: "\"b\"", checksum: "qn4G2w=="),
                ])
            // A part sent again replaces its checksum with the new one's.
            try await store.recordPart(RecordedPart(number: 2, size: 5 << 20, etag: "\"c\"", checksum: "YXFUyQ=="), under: lease)
            #expect(try await store.parts(of: job.id).last?.checksum == "YXFUyQ==")
            try await store.finish(lease, state: .failed, etag: nil, error: JobFailure(.internalError))
            try await cleanup(pool, [job.id])
        }
    }
}

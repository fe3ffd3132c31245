import Adapters
import Foundation
import TestSupport
import Testing

@testable import TransferEngine

/// `Cancellation` over the twins: a waiting job leaves nothing behind, a running one is left to
/// its runner, a completing one is refused, and a client upload's S3 upload is aborted once.
@Suite struct CancellationTests {
    let clock = ManualClock()
    let store: InMemoryJobStore
    let objects = InMemoryObjectStore()
    let spool: DirectorySpool
    let receiver: UploadReceiver

    init() throws {
        store = InMemoryJobStore(clock: clock)
        spool = try DirectorySpool(directory: NSTemporaryDirectory() + "cancel-" + UUID().uuidString)
        receiver = UploadReceiver(
            store: store, objects: objects, spool: spool, settings: EngineSettings(), instance: "here",
            clock: clock)
    }

    var staging: String { EngineSettings().stagingPrefix }

    /// An upload job with `sent` bytes received: parts in S3, the tail on the spool and staged.
    func upload(size: Int, sent: Int) async throws -> Job {
        let job = try await store.insert(
            Job(
                id: UUID().uuidString.lowercased(), owner: "alice", kind: .upload, state: .pending,
                objectKey: "private/alice/c.bin", source: .uploaded(tusMetadata: nil), bytesTotal: Int64(size),
                partSize: PartPlan.minimumPartSize))
        let body = ChunkedBytes(bytes: [UInt8](repeating: 3, count: sent), chunk: 64 * 1024)
        let receiver = self.receiver
        let outcome = try await driving(clock) { try await receiver.receive(jobID: job.id, offset: 0, body: body) }
        #expect(outcome == .waiting(committed: Int64(sent)))
        return try #require(try await store.job(id: job.id))
    }

    @Test func aWaitingUploadLeavesNoS3UploadSpoolFileNorStagedTail() async throws {
        let job = try await upload(size: 12 << 20, sent: (5 << 20) + 100)
        #expect(objects.openUploads == 1 && !objects.keys(under: "\(staging)\(job.id)/").isEmpty && spool.usage.used > 0)
        let outcome = try await Cancellation(receiver: receiver).cancel(job)
        guard case .canceled(let after) = outcome else { Issue.record("\(outcome)"); return }
        #expect(after.state == .canceled)
        #expect(objects.openUploads == 0 && objects.keys(under: staging).isEmpty)
        #expect(spool.files().isEmpty && spool.usage.used == 0)
    }

    @Test func aRunningJobIsLeftToItsRunnerToCleanUp() async throws {
        let job = try await upload(size: 12 << 20, sent: 100)
        _ = try #require(try await store.claimUpload(id: job.id, owner: "elsewhere", leaseMilliseconds: 60_000))
        let running = try #require(try await store.job(id: job.id))
        guard case .canceled = try await Cancellation(receiver: receiver).cancel(running) else { Issue.record("not canceled"); return }
        #expect(!objects.keys(under: "\(staging)\(job.id)/").isEmpty, "the streaming request removes its own tail")
    }

    @Test func aCompletingJobIsRefusedAndKeepsEverything() async throws {
        let job = try await upload(size: 12 << 20, sent: 100)
        let claim = try #require(try await store.claimUpload(id: job.id, owner: "elsewhere", leaseMilliseconds: 60_000))
        try await store.beginCompleting(claim.lease)
        guard case .completing(let after) = try await Cancellation(receiver: receiver).cancel(job) else {
            Issue.record("not refused"); return
        }
        #expect(after.state == .running && !objects.keys(under: "\(staging)\(job.id)/").isEmpty && spool.usage.used > 0)
    }

    @Test func anEndedJobIsUnchangedAndAMissingOneNotFound() async throws {
        let done = try await store.insert(
            Job(
                id: UUID().uuidString.lowercased(), owner: "alice", kind: .copy, state: .completed,
                objectKey: "k", source: .object(ObjectSource(key: "private/alice/s")), bytesTotal: 1,
                partSize: PartPlan.minimumPartSize))
        #expect(try await Cancellation(receiver: receiver).cancel(done) == .unchanged(done))
        var missing = done
        missing.id = UUID().uuidString.lowercased()
        #expect(try await Cancellation(receiver: receiver).cancel(missing) == .notFound)
    }

    @Test func aClientUploadIsAbortedAndAGoneOneCountsAsAborted() async throws {
        let id = try await objects.createMultipartUpload(key: "private/alice/u.bin", attributes: ObjectAttributesSpec())
        let cancellation = Cancellation(store: store, objects: objects, spool: spool)
        try await cancellation.abortUpload(key: "private/alice/u.bin", uploadID: id)
        try await cancellation.abortUpload(key: "private/alice/u.bin", uploadID: id)
        #expect(objects.openUploads == 0)
    }
}

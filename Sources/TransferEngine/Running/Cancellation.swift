/// Ending transfers on their owner's request, the one way for every route that does it: a job
/// canceled (`POST /v1/jobs/{id}/cancel`), a tus upload terminated (`DELETE /v1/tus/{id}`), a
/// client upload aborted (`DELETE /v1/uploads/{id}`, whose record the gateway keeps, so it uses
/// `abortUpload` only).
///
/// A job that was waiting when it was canceled (pending, queued, paused) has nobody else to
/// clean up after it, so its cleanup happens here: its S3 multipart upload aborted, its files
/// on this instance's spool removed (an upload's tail, parts) and an upload's tail pieces
/// staged in the bucket deleted. A running job's worker or streaming request sees the cancel and
/// does the same itself. A job that began to write its object (`Job.completing`) is not
/// canceled: it can only end completed or failed (`JobLifecycle.refusedWhileCompleting`).
public struct Cancellation: Sendable {
    /// What a cancel did.
    public enum Outcome: Sendable, Equatable {
        /// The job is canceled (now, or it was already), cleaned up as above.
        case canceled(Job)
        /// The job began to write its object: nothing changed (409 `job_completing`).
        case completing(Job)
        /// The job had ended otherwise (completed or failed): nothing changed.
        case unchanged(Job)
        /// No such job.
        case notFound
    }

    let store: any JobStore
    let objects: any ObjectStore
    let spool: any Spool
    let stagingPrefix: String
    /// The receiver whose copy of an upload's tail is forgotten with it.
    let receiver: UploadReceiver?

    /// Cancels over the stores and spool `receiver` streams uploads into (the same ones the
    /// worker uses), forgetting its local tails as it removes them.
    public init(receiver: UploadReceiver) {
        self.init(
            store: receiver.store, objects: receiver.objects, spool: receiver.spool,
            stagingPrefix: receiver.settings.stagingPrefix, receiver: receiver)
    }

    public init(
        store: any JobStore, objects: any ObjectStore, spool: any Spool,
        stagingPrefix: String = EngineSettings().stagingPrefix, receiver: UploadReceiver? = nil
    ) {
        self.store = store
        self.objects = objects
        self.spool = spool
        self.stagingPrefix = stagingPrefix
        self.receiver = receiver
    }

    /// Cancels `job` (as the caller read it: whether it was running decides who cleans up).
    public func cancel(_ job: Job) async throws -> Outcome {
        guard let after = try await store.transition(id: job.id, .cancel) else { return .notFound }
        if after.state == .canceled {
            if job.state != .running { await discard(job) }
            return .canceled(after)
        }
        if after.completing && !after.state.isFinal { return .completing(after) }
        return .unchanged(after)
    }

    /// Aborts a multipart upload nobody will complete; one S3 no longer has (aborted or
    /// completed meanwhile) counts as aborted.
    public func abortUpload(key: String, uploadID: String) async throws {
        try await objects.abortIfOpen(key: key, uploadID: uploadID)
    }

    /// Everything a waiting job left on its way, best effort (the janitor sweeps what a failure
    /// here leaves: idle S3 uploads, staged pieces of ended jobs, old spool files).
    private func discard(_ job: Job) async {
        if let uploadID = job.uploadID, let key = job.objectKey { try? await abortUpload(key: key, uploadID: uploadID) }
        receiver?.forgetTail(job.id)
        spool.removeAll(jobID: job.id, keeping: [])
        if job.kind == .upload { await deleteStaged(of: job.id) }
    }

    /// Deletes the tail pieces staged for the job: every object under its staging folder, so
    /// those written but not yet listed by the store go too.
    private func deleteStaged(of jobID: String) async {
        var after: String?
        repeat {
            guard let page = try? await objects.list(prefix: "\(stagingPrefix)\(jobID)/", after: after, limit: 1000) else { return }
            for object in page.objects { try? await objects.deleteObject(key: object.key) }
            after = page.next
        } while after != nil
    }
}

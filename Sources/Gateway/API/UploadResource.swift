import HTTPServer
import TransferEngine

/// An upload job reached through the upload URL of a resumable protocol (tus at `/v1/tus/{id}`,
/// Resumable Uploads for HTTP at `/v1/resumable/{id}`): finding the caller's own, its expiry,
/// finishing one left stranded at completion, terminating one. What each protocol answers is
/// its own; the rules of the upload job are here once.
struct UploadResource: Sendable {
    let context: RouteContext
    let jobs: JobPorts

    /// What an upload URL leads to.
    enum Lookup {
        case found(Job)
        /// No upload job of the caller's by that id (someone else's is missing too).
        case missing
        /// Terminated, or idle past `GATEWAY_UPLOAD_TTL` before its end.
        case ended
    }

    func find(_ http: HTTPRequest, id: String) async throws -> Lookup {
        let job: Job
        do {
            (job, _) = try await OwnedResource.find(
                http, id: id, authenticator: context.authenticator,
                load: { try await jobs.store.job(id: $0) }, owner: \.owner)
        } catch let error as APIError where error.code == .notFound {
            return .missing
        }
        guard job.kind == .upload else { return .missing }
        if job.state == .canceled || (job.state != .completed && context.now() > expires(job)) { return .ended }
        return .found(job)
    }

    /// When an upload expires: `GATEWAY_UPLOAD_TTL` after its last byte (its creation before
    /// any), in seconds since 1970.
    func expires(_ job: Job) -> Int { Int(max(job.bytesAt, job.createdAt) / 1000) + context.settings.uploadTTL }

    /// The job, finished first when every byte is in but the request that sent the last ones
    /// ended (its instance died) before the job did: its client sees nothing left to send, so
    /// the gateway finishes it now, as an empty request at the full offset would (refused while
    /// that request's lease still holds).
    func settled(_ job: Job) async -> Job {
        guard job.state == .running && job.completing, let total = job.bytesTotal, job.bytesCommitted == total else { return job }
        let uploads = jobs.receiver, jobID = job.id
        _ = try? await Shield.run { try await uploads.receive(jobID: jobID, offset: total, body: UploadFinisher.NoBytes()) }
        return (try? await jobs.store.job(id: jobID)) ?? job
    }

    /// The job once no request streams its bytes, waiting at most `limit` for the one that does
    /// (`running`, not completing: it holds the job's lease) to end. A client resumes after a
    /// connection it saw die, and the request on that connection may still be saving its bytes
    /// (or not know yet that its client is gone): the offset it is then told must be one an
    /// append will take (draft-ietf-httpbis-resumable-upload -05 §5). After `limit`, the job as it
    /// is: its durable offset, which an append takes once that request ends.
    func afterStreaming(_ job: Job, limit: Duration = .seconds(2)) async throws -> Job {
        var current = job
        let changes = jobs.changes, deadline = ContinuousClock.now + limit
        while current.state == .running && !current.completing {
            let left = deadline - ContinuousClock.now
            guard left > .zero else { break }
            // The ticket first: a change between the read and the wait is not missed.
            let ticket = changes.ticket(for: job.id)
            guard let fresh = try await jobs.store.job(id: job.id) else { break }
            current = fresh
            guard current.state == .running && !current.completing else {
                changes.forget(ticket, of: job.id)
                break
            }
            // Without the change listener (a test rig, PostgreSQL reconnecting), look again soon.
            _ = await changes.wait(ticket, for: job.id, timeout: changes.isLive ? left : min(left, .milliseconds(100)))
        }
        return current
    }

    /// How a termination ended.
    enum Termination {
        case terminated
        /// The object is written already: delete the object instead.
        case completed
        /// The object is being written: the upload ends completed or failed.
        case completing
    }

    /// Cancels the upload as the jobs API cancels a job (a paused upload too).
    func terminate(_ job: Job) async throws -> Termination {
        guard job.state != .completed else { return .completed }
        let cancellation = jobs.cancellation
        switch try await Shield.run({ try await cancellation.cancel(job) }) {
        case .completing: return .completing
        case .unchanged(let after) where after.state == .completed: return .completed
        case .canceled, .unchanged, .notFound: return .terminated
        }
    }
}

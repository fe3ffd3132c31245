import Foundation

/// A small file through an upload job: `POST /v1/jobs` (type `upload`, with the size), then the
/// bytes with `PUT /v1/jobs/{id}/data` and, after any break, `PATCH` from `Upload-Offset` = the
/// job's `bytesCommitted` (api-guide "Upload jobs"). At most `sliceLimit` bytes are read into
/// memory for one request; a larger file is sent in several.
struct UploadJobTransfer: Sendable {
    let context: TransferContext
    let reporter: ProgressReporter
    var sliceLimit: Int64 = 16 << 20

    func run(_ record: inout TransferRecord) async throws -> TransferResult {
        guard let size = record.size else { throw TransferError(.fileError, "the record of \(record.id) has no size") }
        reporter.setTotal(size)
        var job: API.Job
        if let id = record.serverID {
            job = try await context.api.job(id)
        } else {
            job = try await context.api.createUploadJob(record, size: size, bandwidthLimit: context.configuration.bandwidthLimit)
            record.serverID = job.id
            try context.store.save(record)
        }
        var backoff = Backoff(policy: context.api.retry)
        // A request of ours the gateway has not yet seen end (a pause, a killed process) holds the
        // job for a moment: 409 upload_in_progress. Waited for apart from the retry limit.
        var busy = Backoff(policy: RetryPolicy(limit: 12, base: 1, cap: 5))
        while true {
            switch job.state {
            case "completed":
                reporter.setCommitted(size)
                return TransferResult(reference: record.reference, objectKey: job.objectKey, size: size, etag: job.etag, fileURL: nil)
            case "failed", "canceled":
                throw TransferError(
                    .serverFailed, "the upload job \(job.state): \(job.error?.detail ?? job.error?.code ?? "no reason given")",
                    serverCode: job.error?.code)
            default: break
            }
            try Task.checkCancellation()
            let offset = job.bytesCommitted
            reporter.setCommitted(offset)
            if let next = try await send(job.id, record: record, from: offset, size: size, backoff: &backoff, busy: &busy) {
                if next.bytesCommitted > offset || next.state != job.state {
                    backoff.reset()
                } else {
                    try await backoff.wait(retryAfter: nil, cause: "the gateway took no byte")
                }
                job = next
            } else {
                job = try await context.api.job(job.id)
            }
        }
    }

    /// One `PUT`/`PATCH` from `offset`: the job after it, or `nil` when the job must be read
    /// again (after a wait, for a break, an outage or a conflict).
    private func send(
        _ id: String, record: TransferRecord, from offset: Int64, size: Int64, backoff: inout Backoff, busy: inout Backoff
    ) async throws -> API.Job? {
        let end = min(size, offset + sliceLimit)
        let body = offset < end ? try TransferContext.read(record.fileURL, offset..<end) : Data()
        try await context.pace(Int64(body.count))
        var call = GatewayAPI.Call(method: offset == 0 ? "PUT" : "PATCH", url: context.api.url("v1/jobs/\(id)/data"), body: body)
        if offset == 0 {
            call.headers["Content-Type"] = "application/octet-stream"
        } else {
            call.headers["Content-Type"] = "application/offset+octet-stream"
            call.headers["Upload-Offset"] = String(offset)
        }
        call.onSent = { [reporter] sent in reporter.setInFlight(0, sent) }
        let answer: HTTPAnswer
        do {
            answer = try await context.api.sendOnce(call)
        } catch let error where GatewayAPI.isTransient(error) {
            reporter.drop(0)
            try await backoff.wait(retryAfter: nil, cause: "network: \(error.localizedDescription)")
            return nil
        }
        reporter.drop(0)
        if answer.isSuccess {
            do {
                return try JSONDecoder().decode(API.Job.self, from: answer.body)
            } catch {
                throw TransferError(.badResponse, "the gateway's answer to the upload's data is not a job")
            }
        }
        switch (answer.status, answer.problem?.code) {
        case (409, "offset_mismatch"), (409, "job_not_pending"):
            return nil  // the job says where it stands
        case (409, "upload_in_progress"):
            try await busy.wait(retryAfter: answer.retryAfter.map { max(1, $0) }, cause: GatewayAPI.describe(answer))
            return nil
        case (409, "job_paused"), (503, _), (429, _), (500..., _):
            // 503 storage_unavailable / insufficient_storage keep what arrived (Upload-Offset):
            // wait as told, then go on from the job's bytesCommitted.
            try await backoff.wait(retryAfter: answer.retryAfter, cause: GatewayAPI.describe(answer))
            return nil
        default:
            throw GatewayAPI.failure(answer)
        }
    }
}

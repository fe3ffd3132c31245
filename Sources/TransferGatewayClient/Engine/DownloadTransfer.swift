import Foundation

/// An object to a file through a download job: `POST /v1/jobs` (type `download`) pins the object
/// (size, ETag), then its `dataUrl` (a signed link: no `Authorization`) is read with
/// `Range` + `If-Range` into `FILE.part`, which is renamed to `FILE` only once it is whole.
/// An object replaced meanwhile (412, a 200 with another ETag, or a new job pinning another ETag)
/// fails the task with `sourceChanged` and removes `FILE.part`.
struct DownloadTransfer: Sendable {
    let context: TransferContext
    let reporter: ProgressReporter
    /// The most one ranged request asks for: 64 MiB, or about a second's worth under a bandwidth
    /// limit (the pacer works request by request, so the limit then holds to about a second).
    var chunkLimit: Int64 {
        guard let limit = context.configuration.bandwidthLimit else { return 64 << 20 }
        return max(256 << 10, limit)
    }

    func run(_ record: inout TransferRecord) async throws -> TransferResult {
        var job = try await pin(&record)
        guard let size = record.size, let etag = record.etag else {
            throw TransferError(.badResponse, "the download job pinned no size or ETag")
        }
        reporter.setTotal(size)
        let partial = record.partialURL
        var backoff = Backoff(policy: context.api.retry)
        var relinks = 0
        while true {
            var offset = PartialFile.length(partial)
            if offset > size {
                try? FileManager.default.removeItem(at: partial)
                offset = 0
            }
            reporter.setCommitted(offset)
            if offset == size { return try finish(record, size: size, etag: etag, job: job) }
            try Task.checkCancellation()
            guard let link = job.dataUrl.flatMap(URL.init(string:)) else {
                throw TransferError(.badResponse, "the download job has no dataUrl")
            }
            let last = min(size, offset + chunkLimit) - 1
            try await context.pace(last - offset + 1)
            let sink = PartialFile(url: partial, start: offset, etag: etag)
            var call = GatewayAPI.Call(method: "GET", url: link, authorized: false, sink: sink)
            call.headers = ["Range": "bytes=\(offset)-\(last)", "If-Range": ETag.quoted(etag)]
            call.onReceived = { [reporter] in reporter.setInFlight(0, $0) }
            let answer: HTTPAnswer
            do {
                answer = try await context.api.sendOnce(call)
                sink.close()
            } catch let error where GatewayAPI.isTransient(error) {
                sink.close()
                try await backoff.wait(retryAfter: nil, cause: "network: \(error.localizedDescription)")
                continue
            } catch {
                sink.close()
                throw error
            }
            reporter.drop(0)
            switch answer.status {
            case 200, 206:
                guard PartialFile.length(partial) > offset else { throw changed(record, "the object was replaced (another ETag)") }
                backoff.reset()
            case 412:
                throw changed(record, "the object was replaced since the download began")
            case 403, 404, 410:
                // The link expired (403), or the job is gone (404, 410 after GATEWAY_DOWNLOAD_TTL).
                relinks += 1
                guard relinks <= 3 else { throw GatewayAPI.failure(answer) }
                job = try await repin(&record, gone: answer.status != 403)
            case 416:
                throw changed(record, "the object is shorter than when the download began")
            default:
                guard answer.isTransient else { throw GatewayAPI.failure(answer) }
                try await backoff.wait(retryAfter: answer.retryAfter, cause: GatewayAPI.describe(answer))
            }
        }
    }

    /// The job that pins the object: the recorded one while the gateway still has it, else a new
    /// one, which must pin the ETag recorded before (or the object changed).
    private func pin(_ record: inout TransferRecord) async throws -> API.Job {
        if let id = record.serverID, let job = try? await context.api.job(id), job.state == "completed", job.dataUrl != nil {
            return job
        }
        return try await repin(&record, gone: record.serverID != nil)
    }

    private func repin(_ record: inout TransferRecord, gone: Bool) async throws -> API.Job {
        if !gone, let id = record.serverID, let job = try? await context.api.job(id), job.dataUrl != nil { return job }
        if record.serverID != nil { record.nextCreateKey() }
        try context.store.save(record)
        let job = try await context.api.createDownloadJob(record)
        guard let etag = job.etag, let size = job.bytesTotal else {
            throw TransferError(.badResponse, "the download job pinned no size or ETag")
        }
        if let before = record.etag, ETag.normalized(before) != ETag.normalized(etag) {
            throw changed(record, "the object was replaced since the download began")
        }
        record.serverID = job.id
        record.etag = etag
        record.size = size
        try context.store.save(record)
        return job
    }

    private func finish(_ record: TransferRecord, size: Int64, etag: String, job: API.Job) throws -> TransferResult {
        let partial = record.partialURL
        if size == 0 && !FileManager.default.fileExists(atPath: partial.path) {
            _ = FileManager.default.createFile(atPath: partial.path, contents: nil)
        }
        guard PartialFile.length(partial) == size else { throw TransferError(.integrity, "the file is not \(size) bytes") }
        do {
            if FileManager.default.fileExists(atPath: record.filePath) { try FileManager.default.removeItem(at: record.fileURL) }
            try FileManager.default.moveItem(at: partial, to: record.fileURL)
        } catch {
            throw TransferError(.fileError, "cannot move the finished download into place: \(error.localizedDescription)")
        }
        reporter.setCommitted(size)
        return TransferResult(reference: record.reference, objectKey: job.objectKey, size: size, etag: etag, fileURL: record.fileURL)
    }

    /// `sourceChanged`, leaving no partial file behind.
    private func changed(_ record: TransferRecord, _ message: String) -> TransferError {
        try? FileManager.default.removeItem(at: record.partialURL)
        return TransferError(.sourceChanged, message, serverCode: "source_changed")
    }
}

import HTTPServer
import TransferEngine

/// The one mapping of an upload request's outcome (`UploadReceiver.Outcome`) to HTTP, for an
/// upload job's bytes sent to `PUT`/`PATCH /v1/jobs/{id}/data` and to tus `PATCH /v1/tus/{id}`.
/// Both refuse the same outcomes with the same statuses and codes, and give `Upload-Offset`
/// wherever the upload's committed bytes are known; what differs is each protocol's words and
/// framing (`Dialect`).
enum UploadAnswer {
    /// The protocol the bytes came by.
    enum Dialect: Sendable {
        /// `/v1/jobs/{id}/data`: problem+json in the jobs API's words.
        case jobs
        /// tus 1.0: every answer names `Tus-Resumable`; a canceled upload is 410 `gone`
        /// (terminated), and `Retry-After` follows `Upload-Offset`.
        case tus

        /// `jobs` or `tus`, as this dialect says it.
        func says(jobs: String, tus: String) -> String { self == .tus ? tus : jobs }

        /// A refusal framed for this protocol, with the committed bytes when they are known.
        func frame(_ error: APIError, committed: Int64?) -> HTTPResponse {
            let offset = committed.map { [("Upload-Offset", String($0))] } ?? []
            switch self {
            case .jobs:
                var response = Responses.problem(error)
                for (name, value) in offset { response.headers.add(name, value) }
                return response
            case .tus:
                var plain = error
                plain.retryAfter = nil
                return TusRoutes.refusal(plain, offset + (error.retryAfter.map { [("Retry-After", String($0))] } ?? []))
            }
        }
    }

    /// The answer to `outcome` in `dialect`: for bytes taken (the object completed, or the
    /// upload waiting for more), what `taken` makes of the committed bytes; for the rest, the
    /// refusal framed for the protocol.
    static func response(
        to outcome: UploadReceiver.Outcome, in dialect: Dialect,
        taken: (Int64) async throws -> HTTPResponse
    ) async throws -> HTTPResponse {
        let committed = committed(after: outcome)
        guard let error = refusal(for: outcome, in: dialect) else { return try await taken(committed ?? 0) }
        return dialect.frame(error, committed: committed)
    }

    /// The error a refused outcome is answered with; nil for bytes taken.
    static func refusal(for outcome: UploadReceiver.Outcome, in dialect: Dialect) -> APIError? {
        switch outcome {
        case .completed, .waiting:
            return nil
        case .offsetMismatch(let committed):
            return APIError(
                .offsetMismatch,
                dialect.says(
                    jobs: "The upload has \(committed) bytes committed; send from there (Upload-Offset: \(committed)).",
                    tus: "The upload is at \(committed) bytes."))
        case .busy:
            return APIError(
                .uploadInProgress,
                dialect.says(
                    jobs: "Another request is sending this upload's bytes, or it does not wait for bytes.",
                    tus: "Another request is sending this upload's bytes."))
        case .tooLarge(let declared, _):
            return APIError(
                .payloadTooLarge,
                dialect.says(
                    jobs: "The upload was declared as \(declared) bytes; the body goes past that.",
                    tus: "The upload's length is \(declared) bytes."))
        case .failed(let code, _) where code == .objectExists:
            return APIError(.objectExists, "The key already holds an object and the upload was made with preventOverwrite; the job failed.")
        case .failed(let code, _) where code == .preconditionFailed:
            return APIError(
                .preconditionFailed, "The object is no longer the version ifMatch named; nothing was replaced and the job failed.")
        case .failed(let code, _) where code == .jobTimeout && dialect == .jobs:
            return APIError(.jobNotPending, "The upload ran past its timeoutSeconds; the job failed.")
        case .failed(let code, _):
            return APIError(
                .storageError,
                dialect.says(
                    jobs: "S3 refused a part (\(code.rawValue)); the job failed.",
                    tus: "S3 refused a part past the retry limit; the upload failed."))
        case .canceled:
            return dialect == .tus ? APIError(.gone, "The upload was terminated.") : APIError(.jobNotPending, "The upload was canceled.")
        case .paused:
            return dialect == .tus ? APIError(.jobPaused, "The upload is paused; resume its job, then send the rest.") : .jobPaused
        case .unavailable:
            return .storageUnavailable(retryAfter: retryAfterOutage)
        case .noRoom:
            return dialect == .tus
                ? APIError(.insufficientStorage, "No room for more bytes right now; send them again shortly.", retryAfter: 5)
                : .noRoom()
        case .checksumMismatch:
            var error = APIError(
                .checksumMismatch,
                dialect.says(
                    jobs: "The body does not match its Content-Digest; nothing of it was kept (the offset is unchanged).",
                    tus: "The chunk does not match its Upload-Checksum; nothing was kept."))
            // tus's checksum extension answers a mismatch with 460.
            if dialect == .tus { error.protocolStatus = 460 }
            return error
        }
    }

    /// Seconds a client waits before it sends the rest of an upload that S3's outage stopped:
    /// the first wait of a job sent back by one (`JobBackoff`).
    static let retryAfterOutage = 10

    /// The bytes the upload holds after `outcome` (its `Upload-Offset`), when the outcome says.
    static func committed(after outcome: UploadReceiver.Outcome) -> Int64? {
        switch outcome {
        case .completed(_, let size): return size
        case .waiting(let committed), .offsetMismatch(let committed): return committed
        case .tooLarge(_, let committed), .failed(_, let committed): return committed
        case .paused(let committed), .noRoom(let committed), .checksumMismatch(let committed): return committed
        case .unavailable(let committed): return committed
        case .busy, .canceled: return nil
        }
    }
}

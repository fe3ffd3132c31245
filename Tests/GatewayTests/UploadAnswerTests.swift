import Foundation
import HTTPServer
import Testing
import TransferEngine

@testable import Gateway

/// The one outcome → HTTP table, pinned as the jobs data routes and tus PATCH answered before
/// they shared it: status, code, detail, and every header in order.
@Suite struct UploadAnswerTests {
    struct Expected: Sendable {
        let outcome: UploadReceiver.Outcome
        let status: Int
        let code: String
        let jobs: String
        let tus: String
        /// `Upload-Offset`, when the answer gives one.
        let offset: String?
        /// `Retry-After`, when the answer gives one.
        let retry: String?
        /// tus's own status, where its protocol fixes one (460 for a checksum mismatch).
        var tusStatus: Int? = nil
    }

    static let table: [Expected] = [
        Expected(
            outcome: .offsetMismatch(committed: 7), status: 409, code: "offset_mismatch",
            jobs: "The upload has 7 bytes committed; send from there (Upload-Offset: 7).", tus: "The upload is at 7 bytes.",
            offset: "7", retry: nil),
        Expected(
            outcome: .busy, status: 409, code: "upload_in_progress",
            jobs: "Another request is sending this upload's bytes, or it does not wait for bytes.",
            tus: "Another request is sending this upload's bytes.", offset: nil, retry: nil),
        Expected(
            outcome: .tooLarge(declared: 10, committed: 4), status: 413, code: "payload_too_large",
            jobs: "The upload was declared as 10 bytes; the body goes past that.", tus: "The upload's length is 10 bytes.",
            offset: "4", retry: nil),
        Expected(
            outcome: .failed(code: .retriesExhausted, committed: 5), status: 502, code: "storage_error",
            jobs: "S3 refused a part (retries_exhausted); the job failed.",
            tus: "S3 refused a part past the retry limit; the upload failed.", offset: "5", retry: nil),
        Expected(
            outcome: .paused(committed: 6), status: 409, code: "job_paused",
            jobs: "The job was paused; resume it, then send the rest.",
            tus: "The upload is paused; resume its job, then send the rest.", offset: "6", retry: nil),
        Expected(
            outcome: .noRoom(committed: 8), status: 503, code: "insufficient_storage",
            jobs: "The gateway has no room for more bytes right now; send them again shortly.",
            tus: "No room for more bytes right now; send them again shortly.", offset: "8", retry: "5"),
        Expected(
            outcome: .checksumMismatch(committed: 9), status: 400, code: "checksum_mismatch",
            jobs: "The body does not match its Content-Digest; nothing of it was kept (the offset is unchanged).",
            tus: "The chunk does not match its Upload-Checksum; nothing was kept.", offset: "9", retry: nil, tusStatus: 460),
        Expected(
            outcome: .unavailable(committed: 11), status: 503, code: "storage_unavailable",
            jobs: "S3 is not answering right now. The bytes committed so far are kept; send the rest from Upload-Offset after Retry-After.",
            tus: "S3 is not answering right now. The bytes committed so far are kept; send the rest from Upload-Offset after Retry-After.",
            offset: "11", retry: "10"),
    ]

    static func detail(_ response: HTTPResponse) -> [String: Any] {
        guard case .bytes(let bytes) = response.body else { return [:] }
        return (try? JSONSerialization.jsonObject(with: Data(bytes))) as? [String: Any] ?? [:]
    }

    static func answer(_ outcome: UploadReceiver.Outcome, _ dialect: UploadAnswer.Dialect) async throws -> HTTPResponse {
        try await UploadAnswer.response(to: outcome, in: dialect) { committed in HTTPResponse(status: 299 + Int(committed)) }
    }

    @Test(arguments: table) func refusalsKeepTheirStatusCodeWordsAndHeaders(_ expected: Expected) async throws {
        let jobs = try await Self.answer(expected.outcome, .jobs)
        #expect(jobs.status == expected.status && Self.detail(jobs)["code"] as? String == expected.code)
        #expect(Self.detail(jobs)["detail"] as? String == expected.jobs)
        var jobsHeaders = [("Content-Type", "application/problem+json")]
        if let retry = expected.retry { jobsHeaders.append(("Retry-After", retry)) }
        if let offset = expected.offset { jobsHeaders.append(("Upload-Offset", offset)) }
        #expect(jobs.headers.fields.map { "\($0.name): \($0.value)" } == jobsHeaders.map { "\($0.0): \($0.1)" })

        let tus = try await Self.answer(expected.outcome, .tus)
        #expect(tus.status == (expected.tusStatus ?? expected.status) && Self.detail(tus)["code"] as? String == expected.code)
        #expect(Self.detail(tus)["detail"] as? String == expected.tus)
        var tusHeaders = [("Content-Type", "application/problem+json"), ("Tus-Resumable", "1.0.0")]
        if let offset = expected.offset { tusHeaders.append(("Upload-Offset", offset)) }
        if let retry = expected.retry { tusHeaders.append(("Retry-After", retry)) }
        #expect(tus.headers.fields.map { "\($0.name): \($0.value)" } == tusHeaders.map { "\($0.0): \($0.1)" })
    }

    /// A timed-out upload job is `job_not_pending` in the jobs API; tus knows only that it failed.
    @Test func aTimeoutIsNamedOnlyByTheJobsAPI() async throws {
        let jobs = try await Self.answer(.failed(code: FailureCode.jobTimeout, committed: 3), .jobs)
        #expect(jobs.status == 409 && Self.detail(jobs)["code"] as? String == "job_not_pending")
        #expect(Self.detail(jobs)["detail"] as? String == "The upload ran past its timeoutSeconds; the job failed.")
        let tus = try await Self.answer(.failed(code: FailureCode.jobTimeout, committed: 3), .tus)
        #expect(tus.status == 502 && Self.detail(tus)["code"] as? String == "storage_error" && tus.headers["upload-offset"] == "3")
    }

    /// A canceled upload: the jobs API says it is not pending, tus that it was terminated (410).
    @Test func aCanceledUploadIsNotPendingOrGone() async throws {
        let jobs = try await Self.answer(.canceled, .jobs)
        #expect(jobs.status == 409 && Self.detail(jobs)["code"] as? String == "job_not_pending" && jobs.headers["upload-offset"] == nil)
        #expect(Self.detail(jobs)["detail"] as? String == "The upload was canceled.")
        let tus = try await Self.answer(.canceled, .tus)
        #expect(tus.status == 410 && Self.detail(tus)["code"] as? String == "gone" && tus.headers["tus-resumable"] == "1.0.0")
        #expect(Self.detail(tus)["detail"] as? String == "The upload was terminated." && tus.headers["upload-offset"] == nil)
    }

    /// Bytes taken are the protocol's own answer, given the committed bytes.
    @Test func bytesTakenGoToTheProtocolsAnswer() async throws {
        #expect(try await Self.answer(.completed(etag: "e", size: 11), .tus).status == 310)
        #expect(try await Self.answer(.waiting(committed: 4), .jobs).status == 303)
    }
}

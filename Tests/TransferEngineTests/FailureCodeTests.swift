import Foundation
import Testing
import TransferEngine

/// Failure codes: one snake_case vocabulary on the wire, and every code reads as a sentence a
/// person can act on.
struct FailureCodeTests {
    @Test(arguments: FailureCode.allCases)
    func everyCodeIsSnakeCaseAndHasItsOwnWords(_ code: FailureCode) {
        #expect(code.rawValue.allSatisfy { ("a"..."z").contains($0) || $0 == "_" }, "\(code.rawValue)")
        let text = code.detail()
        #expect(!text.contains(code.rawValue) && text.hasSuffix(".") && text.count > 30, "\(code): \(text)")
    }

    @Test func noTwoCodesShareAWireName() {
        #expect(Set(FailureCode.allCases.map(\.rawValue)).count == FailureCode.allCases.count)
    }

    @Test func theSettingThatHelpsIsNamed() {
        #expect(FailureCode.forbiddenAddress.detail().contains("GATEWAY_IMPORT_ALLOW_HOSTS"))
        #expect(FailureCode.jobTimeout.detail().contains("timeoutSeconds"))
        #expect(FailureCode.spoolTooSmall.detail().contains("partSize"))
        #expect(FailureCode.encryptionRefused.detail().contains("kmsKeyId"))
    }

    @Test(arguments: [(404, "no such file"), (403, "fresh URL"), (503, "passes by itself"), (418, "HTTP 418")])
    func sourceStatusesSayWhatToDo(status: Int, words: String) {
        #expect(FailureCode.sourceHTTPError.detail(status: status).contains(words))
    }

    @Test func aRetryableErrorEndsAsRetriesExhaustedNamingItsCause() {
        let failure = JobFailure(TransferError(code: .throttled, retryable: true))
        #expect(failure == JobFailure(.retriesExhausted, cause: .throttled))
        #expect(failure.detail.contains("slow down"))
    }

    @Test func aFinalErrorEndsAsItself() {
        #expect(JobFailure(TransferError(code: .accessDenied, retryable: false)) == JobFailure(.accessDenied))
        #expect(
            JobFailure(TransferError(code: .sourceHTTPError, retryable: false, status: 404))
                == JobFailure(.sourceHTTPError, status: 404))
    }

    @Test func aFailedIfMatchIsTheSourceChanging() {
        #expect(JobFailure(TransferError.preconditionFailed) == JobFailure(.sourceChanged))
    }

    /// openapi.yaml's `FailureCode` enum lists exactly the codes the engine can write.
    @Test func openAPIListsEveryCode() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let text = try String(contentsOf: root.appendingPathComponent("openapi.yaml"), encoding: .utf8)
        let schema = try #require(text.range(of: "\n    FailureCode:\n"))
        let enumStart = try #require(text.range(of: "      enum:\n", range: schema.upperBound..<text.endIndex))
        var listed: [String] = []
        for line in text[enumStart.upperBound...].split(separator: "\n") {
            guard line.hasPrefix("        - ") else { break }
            listed.append(String(line.dropFirst(10)))
        }
        #expect(listed == FailureCode.allCases.map(\.rawValue))
    }
}

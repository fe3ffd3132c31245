import Testing
import TransferEngine

/// Every code a failed job may carry reads as a sentence a person can act on.
struct FailureDetailTests {
    static let engineCodes = [FailureCode.sourceChanged, FailureCode.crashLoop, FailureCode.uploadExpired, FailureCode.timeout,
                              FailureCode.spoolTooSmall, FailureCode.spoolFailed, FailureCode.sizeMismatch, FailureCode.etagMismatch,
                              FailureCode.invalidJob, FailureCode.entityTooLarge, FailureCode.invalidPartSize]
    static let sourceCodes = ["ForbiddenAddress", "UnresolvableHost", "InvalidURL", "TooManyRedirects", "SourceUnreachable",
                              "RangeIgnored", "ResponseTooLarge", "BadDigest"]

    @Test(arguments: engineCodes + sourceCodes + ["NoSuchKey", "NoSuchUpload", "AccessDenied", "SlowDown", "InternalError"])
    func everyKnownCodeHasItsOwnWords(_ code: String) {
        let text = FailureDetail.text(for: code)
        #expect(!text.contains(code) && text.hasSuffix(".") && text.count > 30, "\(code): \(text)")
    }

    @Test func theSettingThatHelpsIsNamed() {
        #expect(FailureDetail.text(for: "ForbiddenAddress").contains("GATEWAY_IMPORT_ALLOW_HOSTS"))
        #expect(FailureDetail.text(for: FailureCode.timeout).contains("timeoutSeconds"))
        #expect(FailureDetail.text(for: FailureCode.spoolTooSmall).contains("partSize"))
    }

    @Test(arguments: [("SourceHTTP404", "no such file"), ("SourceHTTP403", "fresh URL"), ("SourceHTTP503", "retryLimit"),
                      ("SourceHTTP418", "HTTP 418")])
    func sourceStatusesSayWhatToDo(code: String, words: String) {
        #expect(FailureDetail.text(for: code).contains(words))
    }

    @Test func anUnknownCodeIsNamedInItsFamilysWords() {
        #expect(FailureDetail.text(for: "QuotaOfSomething").contains("QuotaOfSomething"))
        #expect(FailureDetail.text(for: "KMS.DisabledException").contains("kmsKeyId"))
    }
}

import Foundation
import Testing

@testable import TransferGatewayClient

/// The small readers of answers: ETags, Content-Range, S3's error bodies.
struct HTTPHeadersTests {
    @Test func etagsCompareWithoutQuotes() {
        #expect(ETag.normalized("\"abc\"") == "abc")
        #expect(ETag.normalized("abc") == "abc")
        #expect(ETag.normalized("W/\"abc\"") != "abc")
        #expect(ETag.quoted("abc") == "\"abc\"")
        #expect(ETag.quoted("\"abc\"") == "\"abc\"")
    }

    @Test(arguments: [
        ("bytes 0-99/200", Int64(0)), ("bytes 100-199/200", 100), ("bytes 5-5/*", 5),
    ])
    func contentRangeStart(value: String, start: Int64) {
        #expect(ContentRange.start(value) == start)
    }

    @Test(arguments: ["bytes */200", "items 0-1/2", "", "bytes x-1/2"])
    func contentRangeRefused(value: String) {
        #expect(ContentRange.start(value) == nil)
    }

    @Test func s3ExpiredURL() {
        let body = Data(
            "<?xml version=\"1.0\"?><Error><Code>AccessDenied</Code><Message>Request has expired</Message></Error>".utf8)
        #expect(S3ErrorBody.code(body) == "AccessDenied")
        #expect(S3ErrorBody.saysExpired(body))
        #expect(!S3ErrorBody.saysExpired(Data("<Error><Code>AccessDenied</Code><Message>Access Denied</Message></Error>".utf8)))
    }
}

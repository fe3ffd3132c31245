import Testing

@testable import S3

/// `encoding-type=url` answers of ListObjectsV2 (a space is `+`, a `+` is `%2B`, as AWS and
/// SeaweedFS both send them), and the rule that a listing must advance.
@Suite struct ListingEncodingTests {
    @Test(arguments: [
        ("plain/key.txt", "plain/key.txt"),
        ("a+%25%2B%C3%A9.txt", "a %+é.txt"),
        ("b%EF%BF%BE.txt", "b\u{FFFE}.txt"),
        ("c%26%3Cd%3E", "c&<d>"),
        ("lower%c3%a9", "loweré"),
    ])
    func encodedKeysAreDecoded(_ sent: String, _ key: String) {
        #expect(ListingEncoding.decode(sent, encoded: true) == key)
    }

    @Test func anAnswerThatWasNotEncodedIsReadAsItIs() {
        #expect(ListingEncoding.decode("a+%25b", encoded: false) == "a+%25b")
    }

    @Test(arguments: ["%", "%2", "%ZZ", "%FF", "%C3"])
    func brokenEscapesAreRefused(_ sent: String) {
        #expect(ListingEncoding.decode(sent, encoded: true) == nil)
    }

    @Test func aPageMustEndPastWhereItStarted() {
        #expect(ListingEncoding.advances("b", after: nil))
        #expect(ListingEncoding.advances("b", after: "a"))
        #expect(!ListingEncoding.advances("a", after: "a"))
        #expect(!ListingEncoding.advances("a", after: "b"))
        // U+FFFD sorts before U+FFFE: the key S3 wrote instead of the real one goes backwards.
        #expect(!ListingEncoding.advances("k\u{FFFD}", after: "k\u{FFFE}"))
        // Bytes, not Characters: "e" + U+0301 is one Character equal to "é" to Swift, not to S3.
        #expect(ListingEncoding.advances("e\u{301}x", after: "e\u{301}"))
        #expect(ListingEncoding.advances("\u{E9}", after: "e\u{301}"))
    }
}

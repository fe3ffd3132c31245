import Testing

@testable import Gateway

/// The sf-boolean and sf-integer items of the resumable-upload headers (RFC 9651 §3.3.1,
/// §3.3.6, §4.2), one line per input.
struct StructuredFieldTests {
    @Test(
        arguments: [
            ("?1", true), ("?0", false), (" ?1 ", true), ("?1;a=1", true), ("?0;x", false), ("\t?0", false),
        ] as [(String, Bool)])
    func booleans(field: String, value: Bool) {
        #expect(StructuredField.boolean(field) == value)
    }

    @Test(arguments: ["", "?", "?2", "1", "0", "true", "?10", "?1?0", "? 1", "?1,?0", "\"?1\""])
    func notBooleans(field: String) {
        #expect(StructuredField.boolean(field) == nil)
    }

    @Test(
        arguments: [
            ("0", 0), ("3", 3), ("100", 100), (" 42 ", 42), ("7;p=1", 7), ("999999999999999", 999_999_999_999_999),
            ("000012", 12),
        ] as [(String, Int64)])
    func integers(field: String, value: Int64) {
        #expect(StructuredField.integer(field) == value)
    }

    @Test(arguments: ["", "-1", "+1", "1.5", "1e3", "0x10", "1000000000000000", "12 34", "?1", "１"])
    func notIntegers(field: String) {
        #expect(StructuredField.integer(field) == nil)
    }
}

import Testing

@testable import Gateway

@Test func aBodysNamesAreKnownOnlyInTheirOwnBytes() throws {
    let known: FieldNames = ["key", "kmsKeyId", "operation"]
    #expect(known.contains("key") && known.contains("kmsKeyId") && known.contains("operation"))
    // Shorter, longer, another case, and a canonically equivalent spelling (KELVIN SIGN).
    for other in ["", "ke", "keys", "Key", "kms\u{212A}eyId", "operations"] { #expect(!known.contains(other), "\(other)") }
    #expect(throws: APIError.self) { try Responses.fields(Array(#"{"kms\u212AeyId":"k"}"#.utf8), known: known) }
    #expect(try Responses.fields(Array(#"{"k\u0065y":"v"}"#.utf8), known: known).string("key") == "v")
}

import Testing

@testable import Auth

/// One code point beside each boundary of the noncharacter rule, and what the key rule, the
/// identity-id rule and `targetIdentityId` make of a key or id holding it.
struct NoncharacterCase: Sendable, CustomTestStringConvertible {
    let value: UInt32
    let refused: Bool
    var testDescription: String { String(format: "U+%04X %@", value, refused ? "refused" : "allowed") }
    var text: String { "a" + String(Character(Unicode.Scalar(value)!)) + "b" }
}

let noncharacterBoundaries: [NoncharacterCase] = [
    .init(value: 0xFDCF, refused: false),
    .init(value: 0xFDD0, refused: true),
    .init(value: 0xFDDF, refused: true),
    .init(value: 0xFDEF, refused: true),
    .init(value: 0xFDF0, refused: false),
    .init(value: 0xFFFD, refused: false),
    .init(value: 0xFFFE, refused: true),
    .init(value: 0xFFFF, refused: true),
    .init(value: 0x10000, refused: false),
    .init(value: 0x1FFFD, refused: false),
    .init(value: 0x1FFFE, refused: true),
    .init(value: 0x1FFFF, refused: true),
    .init(value: 0x20000, refused: false),
    .init(value: 0x7FFFE, refused: true),
    .init(value: 0xEFFFF, refused: true),
    .init(value: 0x10FFFD, refused: false),
    .init(value: 0x10FFFE, refused: true),
    .init(value: 0x10FFFF, refused: true),
]

@Test(arguments: noncharacterBoundaries)
func theKeyRuleRefusesNoncharacters(_ c: NoncharacterCase) {
    #expect(UnicodeNoncharacters.contains(c.value) == c.refused)
    #expect(UnicodeNoncharacters.occur(in: c.text) == c.refused)
    let key = Result { () throws(AccessDenial) -> String in try ObjectKey.make(prefix: "public/", key: "dir/" + c.text) }
    if c.refused {
        guard case .failure(.invalidKey) = key else { Issue.record("the key rule accepted \(c.testDescription)"); return }
    } else {
        #expect(key == .success("public/dir/" + c.text))
    }
    #expect(Identity.isValidID(c.text) == !c.refused)
    let policy = AccessPolicy(allowGuestRead: false)
    let target = Result { () throws(AccessDenial) -> String in
        try policy.objectKey(for: .read, level: .protected, key: "f", identity: Identity(id: "alice"), targetIdentityID: c.text)
    }
    #expect(
        target
            == (c.refused
                ? .failure(.invalidKey("targetIdentityId is not a valid identity id"))
                : .success("protected/\(c.text)/f")))
}

/// The byte-level scan agrees with the rule on every code point, at the start, middle and end
/// of a string: 66 noncharacters in all.
@Test func theByteScanAgreesWithTheRuleOnEveryScalar() {
    var found = 0
    for value in UInt32(0)...0x10FFFF {
        guard let scalar = Unicode.Scalar(value) else { continue }
        var bytes: [UInt8] = [UInt8(ascii: "x")]
        UTF8.encode(scalar) { bytes.append($0) }
        bytes.append(UInt8(ascii: "y"))
        let expected = UnicodeNoncharacters.contains(value)
        if expected { found += 1 }
        let seen = bytes.withUnsafeBufferPointer { UnicodeNoncharacters.occur(in: $0) }
        let alone = bytes.dropFirst().dropLast().withUnsafeBufferPointer { UnicodeNoncharacters.occur(in: $0) }
        if seen != expected || alone != expected { Issue.record("U+\(String(value, radix: 16)): scan \(seen)/\(alone), rule \(expected)") }
    }
    #expect(found == 66)
}

@Test func aRefusedTargetIsABadRequestOnEveryLevelAndMode() {
    let policy = AccessPolicy(allowGuestRead: true)
    for level in AccessLevel.allCases {
        for mode in [AccessMode.read, .write] {
            #expect(throws: AccessDenial.invalidKey("targetIdentityId is not a valid identity id")) {
                _ = try policy.objectKey(
                    for: mode, level: level, key: "f", identity: Identity(id: "alice"),
                    targetIdentityID: "bob\u{FFFE}")
            }
        }
    }
}

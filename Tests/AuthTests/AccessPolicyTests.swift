import Testing

@testable import Auth

private let alice = Identity(id: "alice")
private let bob = Identity(id: "bob")
private let admin = Identity(id: "root", isAdmin: true)

struct AccessCase: Sendable, CustomTestStringConvertible {
    let who: String
    let identity: Identity
    let mode: AccessMode
    let level: AccessLevel
    let target: String?
    let guestRead: Bool
    /// The object key granted, or the denial.
    let expected: Result<String, AccessDenial>
    var testDescription: String {
        "\(who) \(mode) \(level.rawValue)\(target.map { " of \($0)" } ?? "")\(guestRead ? " (guest read on)" : "")"
    }
}

private func grant(_ key: String) -> Result<String, AccessDenial> { .success(key) }
private let signIn = Result<String, AccessDenial>.failure(.signInRequired)
private let ownerWrite = Result<String, AccessDenial>.failure(.forbidden("only the owner may write protected files"))
private let ownerOnly = Result<String, AccessDenial>.failure(.forbidden("private files belong to their owner only"))

/// The whole access matrix (docs/identity-providers.md): owner, other user, guest (with and without guest read),
/// admin; read and write; every level.
let accessMatrix: [AccessCase] = [
    // public
    .init(who: "owner", identity: alice, mode: .read, level: .public, target: nil, guestRead: false, expected: grant("public/f.txt")),
    .init(who: "owner", identity: alice, mode: .write, level: .public, target: nil, guestRead: false, expected: grant("public/f.txt")),
    .init(who: "other", identity: bob, mode: .read, level: .public, target: nil, guestRead: false, expected: grant("public/f.txt")),
    .init(who: "other", identity: bob, mode: .write, level: .public, target: nil, guestRead: false, expected: grant("public/f.txt")),
    .init(who: "guest", identity: .guest, mode: .read, level: .public, target: nil, guestRead: false, expected: signIn),
    .init(who: "guest", identity: .guest, mode: .read, level: .public, target: nil, guestRead: true, expected: grant("public/f.txt")),
    .init(who: "guest", identity: .guest, mode: .write, level: .public, target: nil, guestRead: true, expected: signIn),
    .init(who: "admin", identity: admin, mode: .write, level: .public, target: nil, guestRead: false, expected: grant("public/f.txt")),
    // protected
    .init(
        who: "owner", identity: alice, mode: .read, level: .protected, target: nil, guestRead: false,
        expected: grant("protected/alice/f.txt")),
    .init(
        who: "owner", identity: alice, mode: .write, level: .protected, target: nil, guestRead: false,
        expected: grant("protected/alice/f.txt")),
    .init(
        who: "owner naming self", identity: alice, mode: .write, level: .protected, target: "alice", guestRead: false,
        expected: grant("protected/alice/f.txt")),
    .init(
        who: "other", identity: bob, mode: .read, level: .protected, target: "alice", guestRead: false,
        expected: grant("protected/alice/f.txt")),
    .init(who: "other", identity: bob, mode: .write, level: .protected, target: "alice", guestRead: false, expected: ownerWrite),
    .init(
        who: "other without target", identity: bob, mode: .read, level: .protected, target: nil, guestRead: false,
        expected: grant("protected/bob/f.txt")),
    .init(who: "guest", identity: .guest, mode: .read, level: .protected, target: "alice", guestRead: true, expected: signIn),
    .init(who: "guest", identity: .guest, mode: .write, level: .protected, target: "alice", guestRead: false, expected: signIn),
    .init(
        who: "admin", identity: admin, mode: .read, level: .protected, target: "alice", guestRead: false,
        expected: grant("protected/alice/f.txt")),
    .init(who: "admin", identity: admin, mode: .write, level: .protected, target: "alice", guestRead: false, expected: ownerWrite),
    // private
    .init(
        who: "owner", identity: alice, mode: .read, level: .private, target: nil, guestRead: false, expected: grant("private/alice/f.txt")),
    .init(
        who: "owner", identity: alice, mode: .write, level: .private, target: nil, guestRead: false, expected: grant("private/alice/f.txt")),
    .init(who: "other", identity: bob, mode: .read, level: .private, target: "alice", guestRead: false, expected: ownerOnly),
    .init(who: "other", identity: bob, mode: .write, level: .private, target: "alice", guestRead: false, expected: ownerOnly),
    .init(who: "guest", identity: .guest, mode: .read, level: .private, target: "alice", guestRead: true, expected: signIn),
    .init(who: "admin", identity: admin, mode: .read, level: .private, target: "alice", guestRead: false, expected: ownerOnly),
]

@Test(arguments: accessMatrix)
func accessMatrixHolds(_ c: AccessCase) {
    let policy = AccessPolicy(allowGuestRead: c.guestRead)
    let result = Result { () throws(AccessDenial) -> String in
        try policy.objectKey(for: c.mode, level: c.level, key: "f.txt", identity: c.identity, targetIdentityID: c.target)
    }
    #expect(result == c.expected)
}

@Test func targetIdentityIsOnlyForOtherLevelsAndMustBeValid() {
    let policy = AccessPolicy(allowGuestRead: false)
    #expect(throws: AccessDenial.self) {
        _ = try policy.objectKey(for: .read, level: .public, key: "f", identity: alice, targetIdentityID: "bob")
    }
    #expect(throws: AccessDenial.self) {
        _ = try policy.objectKey(for: .read, level: .protected, key: "f", identity: alice, targetIdentityID: "..")
    }
    #expect(throws: AccessDenial.self) {
        _ = try policy.objectKey(for: .read, level: .protected, key: "f", identity: alice, targetIdentityID: "a/b")
    }
}

struct KeyCase: Sendable, CustomTestStringConvertible {
    let key: String
    let valid: Bool
    var testDescription: String { "\(valid ? "valid" : "invalid") \(key.debugDescription)" }
}

@Test(arguments: [
    KeyCase(key: "a", valid: true),
    KeyCase(key: "dir/sub/file.txt", valid: true),
    KeyCase(key: "with space & ümlaut/日本.txt", valid: true),
    KeyCase(key: "..hidden/.dotfile", valid: true),
    KeyCase(key: "", valid: false),
    KeyCase(key: "/leading", valid: false),
    KeyCase(key: "trailing/", valid: false),
    KeyCase(key: "a//b", valid: false),
    KeyCase(key: "a/./b", valid: false),
    KeyCase(key: "a/../b", valid: false),
    KeyCase(key: ".", valid: false),
    KeyCase(key: "..", valid: false),
    KeyCase(key: "a\\b", valid: false),
    KeyCase(key: "tab\tkey", valid: false),
    KeyCase(key: "nul\u{0}key", valid: false),
    KeyCase(key: "del\u{7F}key", valid: false),
    KeyCase(key: "c1\u{85}key", valid: false),
    KeyCase(key: "new\nline", valid: false),
])
func objectKeyRules(_ c: KeyCase) {
    let result = Result { () throws(AccessDenial) -> String in try ObjectKey.make(prefix: "public/", key: c.key) }
    if c.valid {
        #expect(result == .success("public/" + c.key))
    } else {
        guard case .failure(.invalidKey) = result else { Issue.record("accepted \(c.key.debugDescription)"); return }
    }
}

@Test func keyLengthBoundaryCountsThePrefixInBytes() {
    let prefix = "public/"
    let fits = String(repeating: "k", count: 1024 - prefix.utf8.count)
    #expect((try? ObjectKey.make(prefix: prefix, key: fits))?.utf8.count == 1024)
    #expect(throws: AccessDenial.self) { _ = try ObjectKey.make(prefix: prefix, key: fits + "k") }
    // Multi-byte characters count by their UTF-8 bytes: 339 × 3 bytes + 7 = 1024.
    let wide = String(repeating: "日", count: 339)
    #expect((try? ObjectKey.make(prefix: prefix, key: wide)) != nil)
    #expect(throws: AccessDenial.self) { _ = try ObjectKey.make(prefix: prefix, key: wide + "k") }
}

@Test(arguments: ["alice", "user-1@example.com", "Ünïcode", "nbsp\u{A0}", "\u{100}", String(repeating: "x", count: 128)])
func validIdentityIDs(_ id: String) { #expect(Identity.isValidID(id)) }

@Test(arguments: [
    "", ".", "..", "a/b", "a\\b", "tab\t", "nl\n", "del\u{7F}", "c1\u{80}", "c1\u{85}", "c1\u{9F}",
    String(repeating: "x", count: 129),
])
func invalidIdentityIDs(_ id: String) { #expect(!Identity.isValidID(id)) }

@Test func canonicallyEquivalentIdsAreDifferentOwners() {
    // "josé" precomposed and decomposed: equal to Swift's ==, different identities here.
    let policy = AccessPolicy(allowGuestRead: false)
    let mallory = Identity(id: "jose\u{301}")
    #expect(throws: AccessDenial.self) {
        _ = try policy.objectKey(for: .write, level: .private, key: "x", identity: mallory, targetIdentityID: "jos\u{E9}")
    }
    #expect(throws: AccessDenial.self) {
        _ = try policy.objectKey(for: .write, level: .protected, key: "x", identity: mallory, targetIdentityID: "jos\u{E9}")
    }
}

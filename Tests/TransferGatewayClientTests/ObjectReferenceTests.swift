import Testing

@testable import TransferGatewayClient

/// The command line's LEVEL/KEY spelling, each refusal named.
struct ObjectReferenceTests {
    @Test(arguments: [
        ("public/a.txt", ObjectReference.public("a.txt")),
        ("private/notes/a.txt", ObjectReference.private("notes/a.txt")),
        ("protected/photos/cat.jpg", ObjectReference.protected("photos/cat.jpg")),
        ("protected@us-east-1:6f1c/avatar.png", ObjectReference.protected("avatar.png", owner: "us-east-1:6f1c")),
        ("private@alice/x", ObjectReference(accessLevel: .private, key: "x", owner: "alice")),
    ])
    func parses(text: String, reference: ObjectReference) throws {
        #expect(try ObjectReference(parsing: text) == reference)
        #expect(reference.description == text)
    }

    @Test(arguments: ["", "public", "public/", "secret/a", "PUBLIC/a", "public@bob/a", "protected@/a", "/a"])
    func refuses(text: String) {
        #expect(throws: ObjectReference.ParseError.self) { try ObjectReference(parsing: text) }
    }
}

/// Who is asking: a signed-in user (the JWT's `sub`), possibly an operator, or a guest.
public struct Identity: Sendable, Equatable {
    /// nil for a guest (no token, where guests are allowed).
    public let id: String?
    public let isAdmin: Bool

    public init(id: String?, isAdmin: Bool = false) {
        self.id = id
        self.isAdmin = isAdmin
    }

    public static let guest = Identity(id: nil)

    /// Identity ids become part of object keys (`private/{id}/…`), so only ids that cannot
    /// break out of their prefix are accepted: 1–128 bytes of UTF-8, no `/` or `\`, no control
    /// character, no Unicode noncharacter (`UnicodeNoncharacters`), and not `.` or `..`.
    public static func isValidID(_ id: String) -> Bool {
        let bytes = id.utf8
        guard !bytes.isEmpty, bytes.count <= 128, id != ".", id != ".." else { return false }
        // Over the UTF-8 bytes: every character refused is ASCII, or a C1 control (C2 80–C2 9F).
        var previous: UInt8 = 0
        for byte in bytes {
            if byte == UInt8(ascii: "/") || byte == UInt8(ascii: "\\") || byte < 0x20 || byte == 0x7F { return false }
            if previous == 0xC2 && byte >= 0x80 && byte <= 0x9F { return false }
            previous = byte
        }
        return !UnicodeNoncharacters.occur(in: id)
    }
}

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
    /// character, and not `.` or `..`.
    public static func isValidID(_ id: String) -> Bool {
        let bytes = id.utf8
        guard !bytes.isEmpty, bytes.count <= 128, id != ".", id != ".." else { return false }
        for scalar in id.unicodeScalars {
            if scalar == "/" || scalar == "\\" { return false }
            if scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value) { return false }
        }
        return true
    }
}

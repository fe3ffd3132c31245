extension ObjectReference {
    /// Why a `LEVEL/KEY` string is not an object reference.
    public struct ParseError: Error, Equatable, Sendable, CustomStringConvertible {
        /// The text that was refused.
        public let text: String
        /// What is wrong with it.
        public let reason: String

        /// A sentence for people.
        public var description: String { "\"\(text)\" is not LEVEL/KEY (\(reason))" }
    }

    /// Parses `LEVEL/KEY` or `LEVEL@OWNER/KEY` (LEVEL is `public`, `protected` or `private`).
    ///
    /// The key is checked only for being there: the gateway applies the key rules and answers
    /// `invalid_key` itself, so the client and the server cannot disagree.
    public init(parsing text: String) throws(ParseError) {
        guard let slash = text.firstIndex(of: "/") else { throw ParseError(text: text, reason: "no / after the level") }
        let head = text[..<slash]
        let key = String(text[text.index(after: slash)...])
        guard !key.isEmpty else { throw ParseError(text: text, reason: "the key is empty") }
        var levelName = Substring(head)
        var owner: String?
        if let at = head.firstIndex(of: "@") {
            levelName = head[..<at]
            let name = head[head.index(after: at)...]
            guard !name.isEmpty else { throw ParseError(text: text, reason: "the owner after @ is empty") }
            owner = String(name)
        }
        guard let level = AccessLevel(rawValue: String(levelName)) else {
            throw ParseError(text: text, reason: "the level must be public, protected or private")
        }
        if owner != nil && level == .public {
            throw ParseError(text: text, reason: "public objects have no owner")
        }
        self.init(accessLevel: level, key: key, owner: owner)
    }
}

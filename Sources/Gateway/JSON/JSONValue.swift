import Auth
import Foundation

/// A parsed JSON value (RFC 8259), for request bodies on hot paths where `JSONDecoder`'s
/// generic machinery costs more than the request's real work. Strict: one value, no trailing
/// bytes, no duplicate keys, nesting at most 32 deep.
enum JSONValue: Equatable, Sendable {
    case null
    case bool(Bool)
    case number(Double)
    case string(String)
    case array([JSONValue])
    case object(JSONObject)

    struct SyntaxError: Error {}

    /// One spelling of the value whatever the order of its members or its white space: what
    /// tells two requests with the same meaning (an `Idempotency-Key`'s fingerprint).
    func canonical(into out: inout [UInt8]) {
        switch self {
        case .null: out += Array("null".utf8)
        case .bool(let value): out += Array((value ? "true" : "false").utf8)
        case .number(let value): out += Array(String(value).utf8)
        case .string(let text): Self.quoted(text, into: &out)
        case .array(let elements):
            out.append(UInt8(ascii: "["))
            for (index, element) in elements.enumerated() {
                if index > 0 { out.append(UInt8(ascii: ",")) }
                element.canonical(into: &out)
            }
            out.append(UInt8(ascii: "]"))
        case .object(let members):
            out.append(UInt8(ascii: "{"))
            for (index, member) in members.pairs.sorted(by: { Array($0.key.utf8).lexicographicallyPrecedes(Array($1.key.utf8)) })
                .enumerated()
            {
                if index > 0 { out.append(UInt8(ascii: ",")) }
                Self.quoted(member.key, into: &out)
                out.append(UInt8(ascii: ":"))
                member.value.canonical(into: &out)
            }
            out.append(UInt8(ascii: "}"))
        }
    }

    /// A string as its length and bytes: unambiguous without escaping.
    private static func quoted(_ text: String, into out: inout [UInt8]) {
        out += Array("\(text.utf8.count):".utf8)
        out += Array(text.utf8)
    }

    static func parse(_ bytes: [UInt8]) throws -> JSONValue {
        var reader = Reader(bytes: bytes)
        reader.skipWhite()
        let value = try reader.value(depth: 0)
        reader.skipWhite()
        guard reader.index == bytes.count else { throw SyntaxError() }
        return value
    }

    private struct Reader {
        let bytes: [UInt8]
        var index = 0

        mutating func skipWhite() {
            while index < bytes.count {
                switch bytes[index] {
                case 0x20, 0x09, 0x0A, 0x0D: index += 1
                default: return
                }
            }
        }

        mutating func value(depth: Int) throws -> JSONValue {
            guard depth < 32, index < bytes.count else { throw SyntaxError() }
            switch bytes[index] {
            case UInt8(ascii: "{"): return try object(depth: depth)
            case UInt8(ascii: "["): return try array(depth: depth)
            case UInt8(ascii: "\""): return .string(try string())
            case UInt8(ascii: "t"): try literal("true"); return .bool(true)
            case UInt8(ascii: "f"): try literal("false"); return .bool(false)
            case UInt8(ascii: "n"): try literal("null"); return .null
            default: return .number(try number())
            }
        }

        mutating func literal(_ word: StaticString) throws {
            let count = word.utf8CodeUnitCount
            guard index + count <= bytes.count else { throw SyntaxError() }
            for i in 0..<count where bytes[index + i] != word.utf8Start[i] { throw SyntaxError() }
            index += count
        }

        mutating func object(depth: Int) throws -> JSONValue {
            index += 1
            var members = JSONObject()
            skipWhite()
            if index < bytes.count, bytes[index] == UInt8(ascii: "}") { index += 1; return .object(members) }
            while true {
                skipWhite()
                guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else { throw SyntaxError() }
                let (key, ascii) = try stringAndWhetherASCII()
                skipWhite()
                guard index < bytes.count, bytes[index] == UInt8(ascii: ":") else { throw SyntaxError() }
                index += 1
                skipWhite()
                guard members.insert(key, try value(depth: depth + 1), ascii: ascii) else { throw SyntaxError() }
                skipWhite()
                guard index < bytes.count else { throw SyntaxError() }
                if bytes[index] == UInt8(ascii: ",") { index += 1; continue }
                if bytes[index] == UInt8(ascii: "}") { index += 1; return .object(members) }
                throw SyntaxError()
            }
        }

        mutating func array(depth: Int) throws -> JSONValue {
            index += 1
            var elements: [JSONValue] = []
            skipWhite()
            if index < bytes.count, bytes[index] == UInt8(ascii: "]") { index += 1; return .array(elements) }
            while true {
                skipWhite()
                elements.append(try value(depth: depth + 1))
                skipWhite()
                guard index < bytes.count else { throw SyntaxError() }
                if bytes[index] == UInt8(ascii: ",") { index += 1; continue }
                if bytes[index] == UInt8(ascii: "]") { index += 1; return .array(elements) }
                throw SyntaxError()
            }
        }

        /// `bytes` as a String if they are valid UTF-8, else nil: decoded (which repairs) and
        /// compared with what came in. `String(validating:as:)` does the same job but, generic,
        /// looks its types up at run time for every string of every request body.
        static func utf8String(_ bytes: UnsafeBufferPointer<UInt8>) -> String? {
            var text = String(decoding: bytes, as: UTF8.self)
            let unchanged = text.withUTF8 { decoded in
                decoded.count == bytes.count && (bytes.isEmpty || memcmp(decoded.baseAddress!, bytes.baseAddress!, bytes.count) == 0)
            }
            return unchanged ? text : nil
        }

        mutating func string() throws -> String { try stringAndWhetherASCII().text }

        /// A string, and whether it is all ASCII (which an object's key lookups use).
        mutating func stringAndWhetherASCII() throws -> (text: String, ascii: Bool) {
            index += 1
            // Most strings have no escape: they become a String straight from the input, and
            // one of ASCII bytes alone needs no check that it is valid UTF-8.
            let start = index
            var high: UInt8 = 0
            while index < bytes.count {
                let byte = bytes[index]
                if byte == UInt8(ascii: "\"") {
                    let ascii = high < 0x80
                    let text = bytes.withUnsafeBufferPointer { all in
                        let run = UnsafeBufferPointer(rebasing: all[start..<index])
                        return ascii ? String(decoding: run, as: UTF8.self) : Self.utf8String(run)
                    }
                    guard let text else { throw SyntaxError() }
                    index += 1
                    return (text, ascii)
                }
                if byte == UInt8(ascii: "\\") || byte < 0x20 { break }
                high |= byte
                index += 1
            }
            var out = Array(bytes[start..<index])
            while index < bytes.count {
                let byte = bytes[index]
                index += 1
                switch byte {
                case UInt8(ascii: "\""):
                    guard let text = out.withUnsafeBufferPointer(Self.utf8String) else { throw SyntaxError() }
                    return (text, out.allSatisfy { $0 < 0x80 })
                case UInt8(ascii: "\\"):
                    guard index < bytes.count else { throw SyntaxError() }
                    let escape = bytes[index]
                    index += 1
                    switch escape {
                    case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): out.append(escape)
                    case UInt8(ascii: "b"): out.append(0x08)
                    case UInt8(ascii: "f"): out.append(0x0C)
                    case UInt8(ascii: "n"): out.append(0x0A)
                    case UInt8(ascii: "r"): out.append(0x0D)
                    case UInt8(ascii: "t"): out.append(0x09)
                    case UInt8(ascii: "u"):
                        var scalar = try hex4()
                        if (0xD800...0xDBFF).contains(scalar) {
                            guard index + 1 < bytes.count, bytes[index] == UInt8(ascii: "\\"), bytes[index + 1] == UInt8(ascii: "u") else {
                                throw SyntaxError()
                            }
                            index += 2
                            let low = try hex4()
                            guard (0xDC00...0xDFFF).contains(low) else { throw SyntaxError() }
                            scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                        }
                        guard let unicode = Unicode.Scalar(scalar) else { throw SyntaxError() }
                        out.append(contentsOf: Array(String(Character(unicode)).utf8))
                    default:
                        throw SyntaxError()
                    }
                case 0..<0x20:
                    throw SyntaxError()
                default:
                    out.append(byte)
                }
            }
            throw SyntaxError()
        }

        mutating func hex4() throws -> UInt32 {
            guard index + 4 <= bytes.count else { throw SyntaxError() }
            var value: UInt32 = 0
            for _ in 0..<4 {
                let byte = bytes[index]
                index += 1
                let digit: UInt32
                switch byte {
                case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = UInt32(byte - 48)
                case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = UInt32(byte - 87)
                case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = UInt32(byte - 55)
                default: throw SyntaxError()
                }
                value = value * 16 + digit
            }
            return value
        }

        /// RFC 8259 §6 number grammar, then Double's parser.
        mutating func number() throws -> Double {
            let start = index
            if index < bytes.count, bytes[index] == UInt8(ascii: "-") { index += 1 }
            guard index < bytes.count else { throw SyntaxError() }
            if bytes[index] == UInt8(ascii: "0") {
                index += 1
            } else {
                guard digits() > 0 else { throw SyntaxError() }
            }
            if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
                index += 1
                guard digits() > 0 else { throw SyntaxError() }
            }
            if index < bytes.count, bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E") {
                index += 1
                if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") { index += 1 }
                guard digits() > 0 else { throw SyntaxError() }
            }
            guard let value = Double(String(decoding: bytes[start..<index], as: UTF8.self)), value.isFinite else {
                throw SyntaxError()
            }
            return value
        }

        mutating func digits() -> Int {
            let start = index
            while index < bytes.count, bytes[index] >= 0x30, bytes[index] <= 0x39 { index += 1 }
            return index - start
        }
    }
}

/// A JSON object's members in the order they came, without duplicates. Request bodies hold a
/// handful, found faster by a scan than by hashing; past 16 an index takes over, so a body of
/// many keys costs no more than a dictionary would.
struct JSONObject: Equatable, Sendable {
    private struct Member: Sendable {
        let key: String
        let value: JSONValue
        /// The UTF-8 length of `key` when it is all ASCII, else -1: such a key equals an ASCII
        /// name only at the same length, told without reading the key.
        let asciiLength: Int
    }

    private var members: [Member] = []
    private var index: [String: Int]?

    var count: Int { members.count }
    var pairs: [(key: String, value: JSONValue)] { members.map { ($0.key, $0.value) } }

    /// The first key, in the body's order, that `matches` (no array of pairs is made).
    func firstKey(where matches: (String) -> Bool) -> String? {
        for member in members where matches(member.key) { return member.key }
        return nil
    }

    /// The member named `key`, one of the routes' own field names: ASCII (asserted in debug
    /// builds).
    subscript(key: String) -> JSONValue? {
        assert(key.utf8.allSatisfy { $0 < 0x80 }, "JSON field names looked up are ASCII")
        return find(key, ascii: true)
    }

    /// `ascii`: whether `key` is all ASCII.
    private func find(_ key: String, ascii: Bool) -> JSONValue? {
        if let index { return index[key].map { members[$0].value } }
        // Swift's `==`, as the index past 16 keys compares: a shortcut on UTF-8 lengths alone
        // would tell "K" from a KELVIN SIGN here and not there, and the index would then trap
        // on keys it was told were distinct. Two ASCII strings are equal only byte for byte,
        // so between those a different length settles it without the full comparison (the
        // lookups of a route's known fields are most of reading a small body).
        let length = ascii ? key.utf8.count : -1
        for member in members where !(length >= 0 && member.asciiLength >= 0 && member.asciiLength != length) {
            if member.key == key { return member.value }
        }
        return nil
    }

    /// Adds a member (`ascii`: whether `key` is all ASCII, as the reader saw); false (and
    /// nothing added) when the key is there already.
    mutating func insert(_ key: String, _ value: JSONValue, ascii: Bool) -> Bool {
        guard find(key, ascii: ascii) == nil else { return false }
        if members.isEmpty { members.reserveCapacity(8) }
        if index == nil && members.count == 16 {
            index = Dictionary(uniqueKeysWithValues: members.enumerated().map { ($1.key, $0) })
        }
        index?[key] = members.count
        members.append(Member(key: key, value: value, asciiLength: ascii ? key.utf8.count : -1))
        return true
    }

    /// Equal members, in any order.
    static func == (a: JSONObject, b: JSONObject) -> Bool {
        a.count == b.count && a.members.allSatisfy { b.find($0.key, ascii: $0.asciiLength >= 0) == $0.value }
    }
}

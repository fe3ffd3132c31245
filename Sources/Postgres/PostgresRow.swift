/// One result row, with values in PostgreSQL's text format, read by column name into typed
/// values. A missing column or a value of the wrong shape is an error naming the column only.
public struct PostgresRow: Sendable {
    let columns: [String: Int]
    let values: [String?]

    public struct DecodingError: Error, CustomStringConvertible {
        public let column: String
        public let expected: String
        public init(column: String, expected: String) {
            self.column = column
            self.expected = expected
        }
        public var description: String { "column \(column) is not \(expected)" }
    }

    public func isNull(_ column: String) -> Bool {
        guard let index = columns[column] else { return true }
        return values[index] == nil
    }

    public func string(_ column: String) throws -> String {
        guard let value = try optionalString(column) else { throw DecodingError(column: column, expected: "non-null") }
        return value
    }

    public func optionalString(_ column: String) throws -> String? {
        guard let index = columns[column] else { throw DecodingError(column: column, expected: "present") }
        return values[index]
    }

    public func int(_ column: String) throws -> Int {
        guard let value = try optionalInt(column) else { throw DecodingError(column: column, expected: "non-null") }
        return value
    }

    public func optionalInt(_ column: String) throws -> Int? {
        guard let text = try optionalString(column) else { return nil }
        guard let value = Int(text) else { throw DecodingError(column: column, expected: "an integer") }
        return value
    }

    public func bool(_ column: String) throws -> Bool {
        switch try string(column) {
        case "t", "true": return true
        case "f", "false": return false
        default: throw DecodingError(column: column, expected: "a boolean")
        }
    }
}

extension PostgresRow {
    /// A `bytea` value (text format, hex form `\x…`), or nil when NULL.
    public func optionalBytes(_ column: String) throws -> [UInt8]? {
        guard let text = try optionalString(column) else { return nil }
        let utf8 = Array(text.utf8)
        guard utf8.count >= 2, utf8[0] == UInt8(ascii: "\\"), utf8[1] == UInt8(ascii: "x"), utf8.count % 2 == 0 else {
            throw DecodingError(column: column, expected: "bytea in hex form")
        }
        func nibble(_ c: UInt8) -> UInt8? {
            switch c {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): return c - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): return c - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): return c - UInt8(ascii: "A") + 10
            default: return nil
            }
        }
        var out: [UInt8] = []
        out.reserveCapacity((utf8.count - 2) / 2)
        var i = 2
        while i < utf8.count {
            guard let high = nibble(utf8[i]), let low = nibble(utf8[i + 1]) else {
                throw DecodingError(column: column, expected: "bytea in hex form")
            }
            out.append(high << 4 | low)
            i += 2
        }
        return out
    }
}

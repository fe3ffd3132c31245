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

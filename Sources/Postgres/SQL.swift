/// A statement whose interpolated values become bind parameters (`$1`, `$2`, …), never text
/// pasted into the SQL: `"SELECT * FROM jobs WHERE id = \(id)"` sends `id` separately.
/// There is no way to interpolate raw SQL, so injection cannot be typed by accident.
public struct SQL: Sendable, ExpressibleByStringInterpolation {
    public private(set) var text: String
    public private(set) var parameters: [String?]

    public init(stringLiteral value: String) {
        text = value
        parameters = []
    }

    public init(stringInterpolation: Interpolation) {
        text = stringInterpolation.text
        parameters = stringInterpolation.parameters
    }

    public struct Interpolation: StringInterpolationProtocol {
        var text = ""
        var parameters: [String?] = []

        public init(literalCapacity: Int, interpolationCount: Int) {
            text.reserveCapacity(literalCapacity + interpolationCount * 3)
        }

        public mutating func appendLiteral(_ literal: String) {
            text += literal
        }

        /// A constant piece of SQL (a column list, say). Only a `StaticString` makes one, so no
        /// runtime value can become SQL text this way.
        public mutating func appendInterpolation(_ fragment: SQLFragment) {
            text += fragment.text
        }

        /// A bind parameter in PostgreSQL's text format.
        public mutating func appendInterpolation(_ value: some PostgresEncodable) {
            parameters.append(value.postgresText)
            text += "$\(parameters.count)"
        }

        /// A nullable bind parameter.
        public mutating func appendInterpolation(_ value: (some PostgresEncodable)?) {
            parameters.append(value?.postgresText)
            text += "$\(parameters.count)"
        }
    }
}

/// SQL text fixed at compile time.
public struct SQLFragment: Sendable {
    let text: String
    public init(_ text: StaticString) { self.text = text.description }
}

/// A value that can be sent as a bind parameter in text format.
public protocol PostgresEncodable: Sendable {
    var postgresText: String { get }
}

extension String: PostgresEncodable { public var postgresText: String { self } }
extension Int: PostgresEncodable { public var postgresText: String { String(self) } }
extension Int64: PostgresEncodable { public var postgresText: String { String(self) } }
extension Int32: PostgresEncodable { public var postgresText: String { String(self) } }
extension Double: PostgresEncodable { public var postgresText: String { String(self) } }
extension Bool: PostgresEncodable { public var postgresText: String { self ? "true" : "false" } }

/// `bytea` in hex form.
public struct PostgresBytes: PostgresEncodable {
    public let bytes: [UInt8]
    public init(_ bytes: [UInt8]) { self.bytes = bytes }
    public var postgresText: String {
        let hex = Array("0123456789abcdef".utf8)
        var out: [UInt8] = [UInt8(ascii: "\\"), UInt8(ascii: "x")]
        for byte in bytes {
            out.append(hex[Int(byte >> 4)])
            out.append(hex[Int(byte & 0xF)])
        }
        return String(decoding: out, as: UTF8.self)
    }
}

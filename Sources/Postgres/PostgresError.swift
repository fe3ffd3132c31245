/// A PostgreSQL failure, described without SQL text or data values.
public struct PostgresError: Error, Sendable, CustomStringConvertible {
    public enum Kind: Sendable { case connection, query }
    public let kind: Kind
    /// SQLSTATE when the server sent one.
    public let sqlState: String?
    public let message: String

    /// The server cannot be reached or is shutting down (SQLSTATE classes 08 and 57P): waiting
    /// helps, the request was not wrong.
    public var meansUnavailable: Bool {
        kind == .connection || (sqlState.map { $0.hasPrefix("08") || $0.hasPrefix("57P") } ?? false)
    }

    public var description: String {
        "PostgreSQL \(kind == .connection ? "connection" : "query") failed" + (sqlState.map { " (\($0))" } ?? "")
            + ": \(message)"
    }
}

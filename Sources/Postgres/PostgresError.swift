/// A PostgreSQL failure, described without SQL text or data values.
public struct PostgresError: Error, Sendable, CustomStringConvertible {
    public enum Kind: Sendable { case connection, query }
    public let kind: Kind
    /// SQLSTATE when the server sent one.
    public let sqlState: String?
    public let message: String

    public var description: String {
        "PostgreSQL \(kind == .connection ? "connection" : "query") failed" + (sqlState.map { " (\($0))" } ?? "")
            + ": \(message)"
    }
}

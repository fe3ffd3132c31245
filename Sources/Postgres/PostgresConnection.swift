import CPostgres

#if canImport(Glibc)
    import Glibc
#endif

/// One libpq connection. Every call blocks: use it only from a thread or queue the caller
/// owns, never from Swift's cooperative pool. Not thread-safe; one user at a time.
public final class PostgresConnection {
    let handle: OpaquePointer

    /// Connects with a libpq connection string or `postgres://` URL, waiting at most
    /// `connectTimeout` seconds. `settings` are server settings for the session (`-c name=value`;
    /// names and values of letters, digits, `_` and `.` only).
    public init(url: String, connectTimeout: Int = 5, settings: [(String, String)] = []) throws {
        // Notices (e.g. "already exists, skipping") would go to stderr raw, outside the JSON log.
        let options = ([("client_min_messages", "warning")] + settings).map { "-c \($0.0)=\($0.1)" }.joined(separator: " ")
        let keywords = ["dbname", "connect_timeout", "application_name", "options"]
        let values = [url, String(max(1, connectTimeout)), "transfer-gateway", options]
        let connection: OpaquePointer? = Self.withCStrings(keywords) { k in
            Self.withCStrings(values) { v in PQconnectdbParams(k, v, 1) }
        }
        guard let connection else {
            throw PostgresError(kind: .connection, sqlState: nil, message: "out of memory")
        }
        guard PQstatus(connection) == CONNECTION_OK else {
            let message = Self.firstLine(PQerrorMessage(connection))
            PQfinish(connection)
            throw PostgresError(kind: .connection, sqlState: nil, message: message)
        }
        // The server's notices (a FATAL as it shuts down, say) would go to stderr raw, outside
        // the JSON log: the failures they tell of reach the caller as errors anyway.
        PQsetNoticeProcessor(connection, { _, _ in }, nil)
        handle = connection
    }

    deinit {
        PQfinish(handle)
    }

    /// Whether the server connection still works (after an error, say).
    public var isHealthy: Bool { PQstatus(handle) == CONNECTION_OK }

    /// Runs `sql` with its parameters bound (text format) and returns the rows.
    @discardableResult
    public func query(_ sql: SQL) throws -> [PostgresRow] {
        let result: OpaquePointer? = Self.withOptionalCStrings(sql.parameters) { values in
            PQexecParams(handle, sql.text, Int32(sql.parameters.count), nil, values, nil, nil, 0)
        }
        guard let result else {
            throw PostgresError(kind: .connection, sqlState: nil, message: Self.firstLine(PQerrorMessage(handle)))
        }
        defer { PQclear(result) }
        let status = PQresultStatus(result)
        guard status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK else {
            let state = PQresultErrorField(result, Int32(UInt8(ascii: "C"))).map { String(cString: $0) }
            let kind: PostgresError.Kind = PQstatus(handle) == CONNECTION_OK ? .query : .connection
            throw PostgresError(kind: kind, sqlState: state, message: Self.firstLine(PQresultErrorMessage(result)))
        }
        let rowCount = Int(PQntuples(result))
        let columnCount = Int(PQnfields(result))
        var columns: [String: Int] = [:]
        for column in 0..<columnCount {
            columns[String(cString: PQfname(result, Int32(column)))] = column
        }
        var rows: [PostgresRow] = []
        rows.reserveCapacity(rowCount)
        for row in 0..<rowCount {
            var values: [String?] = []
            values.reserveCapacity(columnCount)
            for column in 0..<columnCount {
                if PQgetisnull(result, Int32(row), Int32(column)) == 1 {
                    values.append(nil)
                } else {
                    values.append(String(cString: PQgetvalue(result, Int32(row), Int32(column))))
                }
            }
            rows.append(PostgresRow(columns: columns, values: values))
        }
        return rows
    }

    private static func withOptionalCStrings<R>(_ strings: [String?], _ body: (UnsafePointer<UnsafePointer<CChar>?>?) -> R) -> R {
        var pointers: [UnsafeMutablePointer<CChar>?] = strings.map { $0.map { strdup($0) } ?? nil }
        defer { for p in pointers { free(p) } }
        if pointers.isEmpty { return body(nil) }
        return pointers.withUnsafeMutableBufferPointer { buffer in
            buffer.baseAddress!.withMemoryRebound(to: UnsafePointer<CChar>?.self, capacity: buffer.count) { body($0) }
        }
    }

    /// Runs a statement with no parameters and no result rows of interest (e.g. `SELECT 1`).
    public func execute(_ sql: StaticString) throws {
        guard let result = PQexec(handle, sql.description) else {
            throw PostgresError(kind: .connection, sqlState: nil, message: Self.firstLine(PQerrorMessage(handle)))
        }
        defer { PQclear(result) }
        let status = PQresultStatus(result)
        guard status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK else {
            // As in `query`: a failure on a connection the server dropped (it restarts, say)
            // comes without SQLSTATE; the connection's state says what it was.
            let state = PQresultErrorField(result, Int32(UInt8(ascii: "C"))).map { String(cString: $0) }
            let kind: PostgresError.Kind = PQstatus(handle) == CONNECTION_OK ? .query : .connection
            throw PostgresError(kind: kind, sqlState: state, message: Self.firstLine(PQresultErrorMessage(result)))
        }
    }

    private static func firstLine(_ text: UnsafePointer<CChar>?) -> String {
        guard let text else { return "unknown error" }
        return String(cString: text).split(separator: "\n").first.map(String.init) ?? "unknown error"
    }

    private static func withCStrings<R>(_ strings: [String], _ body: (UnsafePointer<UnsafePointer<CChar>?>) -> R) -> R {
        var pointers: [UnsafeMutablePointer<CChar>?] = strings.map { strdup($0) }
        pointers.append(nil)
        defer { for p in pointers { free(p) } }
        return pointers.withUnsafeBufferPointer { buffer in
            buffer.baseAddress!.withMemoryRebound(to: UnsafePointer<CChar>?.self, capacity: buffer.count) { body($0) }
        }
    }
}

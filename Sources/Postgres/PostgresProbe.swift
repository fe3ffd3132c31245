import Dispatch

/// Answers "does PostgreSQL answer?" for /readyz: connect, `SELECT 1`, disconnect, on a
/// queue of its own with a short timeout.
public struct PostgresProbe: Sendable {
    private let url: String
    private let queue = DispatchQueue(label: "postgres.probe")

    public init(url: String) {
        self.url = url
    }

    public func check(timeout: Int) async -> Result<Void, PostgresError> {
        await withCheckedContinuation { continuation in
            queue.async { [url] in
                do {
                    let connection = try PostgresConnection(url: url, connectTimeout: timeout)
                    try connection.execute("SELECT 1")
                    continuation.resume(returning: .success(()))
                } catch let error as PostgresError {
                    continuation.resume(returning: .failure(error))
                } catch {
                    continuation.resume(returning: .failure(PostgresError(kind: .connection, sqlState: nil, message: "\(error)")))
                }
            }
        }
    }
}

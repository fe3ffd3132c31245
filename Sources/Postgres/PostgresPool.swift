import Dispatch
import Synchronization

/// A fixed set of libpq connections, each used on a dispatch queue of its own, so blocking
/// libpq calls never run on Swift's cooperative pool. `withConnection` waits for a free
/// connection, runs the work on that connection's queue, and hands the connection back; a
/// connection that broke (server restart) is replaced on its next use.
public final class PostgresPool: Sendable {
    private final class Slot: @unchecked Sendable {
        // Confinement: `connection` is touched only on `queue`, and only by the holder of the slot.
        let queue: DispatchQueue
        var connection: PostgresConnection?
        init(index: Int) { queue = DispatchQueue(label: "postgres.connection.\(index)") }
    }

    private struct State {
        var idle: [Slot]
        var waiters: [CheckedContinuation<Slot, Never>] = []
    }

    private let url: String
    private let connectTimeout: Int
    private let settings: [(String, String)]
    private let state: Mutex<State>

    /// `settings`: server settings every connection starts its session with (see `PostgresConnection`).
    public init(url: String, size: Int, connectTimeout: Int = 5, settings: [(String, String)] = []) {
        self.url = url
        self.connectTimeout = connectTimeout
        self.settings = settings
        state = Mutex(State(idle: (0..<max(1, size)).map(Slot.init)))
    }

    /// Runs `work` with a connection, on a thread the pool owns. Errors from `work` pass through;
    /// a connection left broken by them is dropped and reopened next time.
    @discardableResult
    public func withConnection<T: Sendable>(_ work: @escaping @Sendable (PostgresConnection) throws -> T) async throws -> T {
        let slot = await acquire()
        defer { release(slot) }
        return try await withCheckedThrowingContinuation { continuation in
            slot.queue.async { [url, connectTimeout, settings] in
                do {
                    if slot.connection?.isHealthy != true {
                        slot.connection = nil
                        slot.connection = try PostgresConnection(url: url, connectTimeout: connectTimeout, settings: settings)
                    }
                    guard let connection = slot.connection else {
                        throw PostgresError(kind: .connection, sqlState: nil, message: "no connection")
                    }
                    let value = try work(connection)
                    continuation.resume(returning: value)
                } catch {
                    if slot.connection?.isHealthy != true { slot.connection = nil }
                    continuation.resume(throwing: error)
                }
            }
        }
    }

    /// Runs `work` inside BEGIN … COMMIT, rolling back when it throws.
    @discardableResult
    public func withTransaction<T: Sendable>(_ work: @escaping @Sendable (PostgresConnection) throws -> T) async throws -> T {
        try await withConnection { connection in
            try connection.execute("BEGIN")
            do {
                let value = try work(connection)
                try connection.execute("COMMIT")
                return value
            } catch {
                try? connection.execute("ROLLBACK")
                throw error
            }
        }
    }

    private func acquire() async -> Slot {
        if let slot = state.withLock({ $0.idle.popLast() }) { return slot }
        return await withCheckedContinuation { continuation in
            let slot = state.withLock { s -> Slot? in
                if let slot = s.idle.popLast() { return slot }
                s.waiters.append(continuation)
                return nil
            }
            if let slot { continuation.resume(returning: slot) }
        }
    }

    private func release(_ slot: Slot) {
        let waiter = state.withLock { s -> CheckedContinuation<Slot, Never>? in
            if s.waiters.isEmpty {
                s.idle.append(slot)
                return nil
            }
            return s.waiters.removeFirst()
        }
        waiter?.resume(returning: slot)
    }
}

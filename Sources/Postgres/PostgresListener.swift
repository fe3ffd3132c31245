import CPostgres
import Dispatch
import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// One connection that `LISTEN`s on a channel and hands every notification's payload to
/// `onNotify`, on a thread of its own (libpq blocks). When the connection breaks it reconnects
/// with backoff and then calls `onReconnect`: notifications sent while it was away are lost, so
/// whoever waits on them should look again.
public final class PostgresListener: Sendable {
    private let url: String
    private let channel: String
    private let onNotify: @Sendable (String) -> Void
    private let onReconnect: @Sendable () -> Void
    private let stopping = Atomic<Bool>(false)
    private let connected = Atomic<Bool>(false)

    /// `channel` must be a plain identifier (letters, digits, `_`): it is written into `LISTEN`.
    public init(
        url: String, channel: StaticString, onNotify: @escaping @Sendable (String) -> Void,
        onReconnect: @escaping @Sendable () -> Void
    ) {
        self.url = url
        self.channel = channel.description
        self.onNotify = onNotify
        self.onReconnect = onReconnect
    }

    /// Whether the listening connection is up now.
    public var isConnected: Bool { connected.load(ordering: .acquiring) }

    public func start() {
        let thread = Thread { [self] in run() }
        thread.start()
    }

    /// Ends the loop within a second.
    public func stop() { stopping.store(true, ordering: .releasing) }

    private func run() {
        var delay = 0.2
        while !stopping.load(ordering: .acquiring) {
            if let connection = connect() {
                delay = 0.2
                connected.store(true, ordering: .releasing)
                onReconnect()
                listen(on: connection.handle)
                connected.store(false, ordering: .releasing)
            }
            if stopping.load(ordering: .acquiring) { break }
            usleep(useconds_t(delay * 1_000_000))
            delay = min(delay * 2, 5)
        }
    }

    private func connect() -> PostgresConnection? {
        guard let connection = try? PostgresConnection(url: url, connectTimeout: 5),
            let result = PQexec(connection.handle, "LISTEN \(channel)")
        else { return nil }
        defer { PQclear(result) }
        return PQresultStatus(result) == PGRES_COMMAND_OK ? connection : nil
    }

    /// Waits on the socket (at most a second at a time, to notice `stop`) and hands over every
    /// notification, until the connection breaks.
    private func listen(on connection: OpaquePointer) {
        let socket = PQsocket(connection)
        guard socket >= 0 else { return }
        while !stopping.load(ordering: .acquiring) {
            var poller = pollfd(fd: socket, events: Int16(POLLIN), revents: 0)
            let ready = poll(&poller, 1, 1000)
            if ready < 0 && errno != EINTR { return }
            if ready > 0 {
                guard PQconsumeInput(connection) == 1 else { return }
                while let notice = PQnotifies(connection) {
                    let payload = String(cString: notice.pointee.extra)
                    PQfreemem(notice)
                    onNotify(payload)
                }
            }
            if PQstatus(connection) != CONNECTION_OK { return }
        }
    }
}

import Synchronization

/// What every connection of one server shares: the responder, the configuration, the date
/// cache, and the registry of open connections.
final class ServerContext: Sendable {
    let responder: any HTTPResponder
    let configuration: HTTPServerConfiguration
    private let registry = Mutex<[ObjectIdentifier: HTTPConnection]>([:])
    /// Open connections by peer address, and requests in flight by forwarded client.
    private let perClient = Mutex<[String: Int]>([:])
    /// Set once a shutdown has reached every open connection; handlers read it through
    /// `HTTPRequest.serverIsShuttingDown`.
    let shuttingDown = Atomic<Bool>(false)
    /// Reads of a body straight into a handler's chunk (`readBodyDirectly`): the tests' proof
    /// that a body took that path.
    let directBodyReads = Atomic<Int>(0)

    init(responder: any HTTPResponder, configuration: HTTPServerConfiguration) {
        self.responder = responder
        self.configuration = configuration
    }

    var connectionCount: Int { registry.withLock { $0.count } }

    enum Admission { case admitted, serverFull, clientFull }

    /// Registers a connection unless a cap is reached: the server's, or its address's (not
    /// counted for trusted proxies, whose clients are counted per request instead).
    func admit(_ connection: HTTPConnection) -> Admission {
        let full = registry.withLock { r -> Bool in
            guard r.count < configuration.maxConnections else { return true }
            r[ObjectIdentifier(connection)] = connection
            return false
        }
        if full { return .serverFull }
        guard !connection.peerIsProxy else { return .admitted }
        if take(connection.peerAddress) { return .admitted }
        _ = registry.withLock { $0.removeValue(forKey: ObjectIdentifier(connection)) }
        return .clientFull
    }

    func connectionClosed(_ connection: HTTPConnection) {
        guard registry.withLock({ $0.removeValue(forKey: ObjectIdentifier(connection)) }) != nil else { return }
        if !connection.peerIsProxy { give(connection.peerAddress) }
    }

    /// One more for `client`, unless it is at the per-client cap.
    func take(_ client: String) -> Bool {
        perClient.withLock { counts in
            let now = counts[client, default: 0]
            guard now < configuration.maxConnectionsPerClient else { return false }
            counts[client] = now + 1
            return true
        }
    }

    func give(_ client: String) {
        perClient.withLock { counts in
            guard let now = counts[client] else { return }
            if now <= 1 { counts.removeValue(forKey: client) } else { counts[client] = now - 1 }
        }
    }

    var connections: [HTTPConnection] { registry.withLock { Array($0.values) } }
}

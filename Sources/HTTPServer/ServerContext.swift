import Synchronization

/// What every connection of one server shares: the responder, the configuration, the date
/// cache, and the registry of open connections.
final class ServerContext: Sendable {
    let responder: any HTTPResponder
    let configuration: HTTPServerConfiguration
    private let registry = Mutex<[ObjectIdentifier: HTTPConnection]>([:])
    /// Set once a shutdown has reached every open connection; handlers read it through
    /// `HTTPRequest.serverIsShuttingDown`.
    let shuttingDown = Atomic<Bool>(false)

    init(responder: any HTTPResponder, configuration: HTTPServerConfiguration) {
        self.responder = responder
        self.configuration = configuration
    }

    var connectionCount: Int { registry.withLock { $0.count } }

    /// Registers a connection unless the cap is reached.
    func admit(_ connection: HTTPConnection) -> Bool {
        registry.withLock { r in
            guard r.count < configuration.maxConnections else { return false }
            r[ObjectIdentifier(connection)] = connection
            return true
        }
    }

    func connectionClosed(_ connection: HTTPConnection) {
        _ = registry.withLock { $0.removeValue(forKey: ObjectIdentifier(connection)) }
    }

    var connections: [HTTPConnection] { registry.withLock { Array($0.values) } }
}

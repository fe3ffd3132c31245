import Adapters
import Auth
import Foundation
import HTTPServer
import TestSupport
import TransferEngine

@testable import Gateway

/// Every route over in-memory ports (the twins of TestSupport): the real router and responder,
/// no database, no S3, no socket.
final class RouteRig: Sendable {
    static let secret = Array("route-tests-secret-of-at-least-32-bytes".utf8)

    let clock = ManualClock(start: 1_800_000_000_000)
    let store: InMemoryJobStore
    let objects: InMemoryObjectStore
    let clientUploads: InMemoryClientUploadStore
    let changes = JobChanges()
    /// The event feed's twin: nothing records on its own; tests record what they need.
    let feed: InMemoryEventFeed
    let spool: DirectorySpool
    let responder: GatewayResponder
    let logs = MemorySink()
    /// What every route of the rig shares, built once.
    let context: RouteContext

    init(
        sourceCheck: (any SourceAddressCheck)? = nil, presigner: any Presigner = StaticPresigner(),
        _ tweak: (inout RouteSettings) -> Void = { _ in }
    ) throws {
        store = InMemoryJobStore(clock: clock)
        // One database's twins: an identity's open uploads count its upload jobs and client uploads together.
        clientUploads = InMemoryClientUploadStore(jobs: store)
        objects = InMemoryObjectStore(clock: clock)
        feed = InMemoryEventFeed(changes: changes, now: { [clock] in Int64(clock.now()) })
        spool = try DirectorySpool(directory: NSTemporaryDirectory() + "route-spool-" + UUID().uuidString)
        var settings = RouteSettings()
        settings.engine.roomWaitMilliseconds = 1000
        tweak(&settings)
        let receiver = UploadReceiver(
            store: store, objects: objects, spool: spool, settings: settings.engine, instance: "rig",
            clock: clock)
        context = Self.context(
            settings: settings,
            jobs: JobPorts(
                store: store, objects: objects, receiver: receiver,
                clientUploads: clientUploads, changes: changes,
                idempotency: InMemoryIdempotencyStore(), sourceCheck: sourceCheck, events: feed, checksums: store),
            presigner: presigner)
        responder = GatewayResponder(
            router: GatewayRoutes(context: context, checks: [], openAPI: nil).router(), cors: CORS(origins: []),
            logger: Logger(level: .info, sink: logs), metrics: Metrics(), instancePrefix: "r-")
    }

    /// A context over the twins: tokens signed with `secret`, guests let in as the settings say
    /// (as GatewayApp does), a static presigner unless told otherwise, the wall clock.
    static func context(
        settings: RouteSettings = RouteSettings(), jobs: JobPorts? = nil, metrics: Metrics = Metrics(),
        presigner: any Presigner = StaticPresigner()
    ) -> RouteContext {
        let now = { @Sendable in Int(Date().timeIntervalSince1970) }
        return RouteContext(
            authenticator: Authenticator(
                verifier: JWTVerifier(keys: [.hmac(secret)]), allowGuestRead: settings.allowGuestRead,
                now: now),
            presigner: presigner, metrics: metrics, settings: settings, jobs: jobs, now: now, monotonic: { 0 })
    }

    func token(_ subject: String) -> String {
        TokenMinter.hs256(secret: Self.secret, subject: subject, issuedAt: Int(Date().timeIntervalSince1970), ttl: 600)
    }

    struct Answer {
        let status: Int
        let headers: HTTPHeaders
        let body: [UInt8]
        var json: [String: Any] { (try? JSONSerialization.jsonObject(with: Data(body))) as? [String: Any] ?? [:] }
        var code: String? { json["code"] as? String }
    }

    /// One request through the router, as `as` (a subject) when given.
    func send(
        _ method: String, _ target: String, as subject: String? = nil, json: [String: Any]? = nil, body: [UInt8] = [],
        headers: [(String, String)] = []
    ) async throws -> Answer {
        var all = headers
        if let subject { all.append(("Authorization", "Bearer \(token(subject))")) }
        var bytes = body
        if let json {
            bytes = Array(try JSONSerialization.data(withJSONObject: json))
            all.append(("Content-Type", "application/json"))
        }
        if !bytes.isEmpty { all.append(("Content-Length", String(bytes.count))) }
        var text = "\(method) \(target) HTTP/1.1\r\nHost: rig\r\n"
        for (name, value) in all { text += "\(name): \(value)\r\n" }
        text += "\r\n"
        var parser = HTTPHeadParser()
        guard case .complete(let head, _) = Array(text.utf8).withUnsafeBytes({ parser.parse($0) }) else {
            throw APIError.badRequest("bad test request")
        }
        let request = HTTPRequest(head: head, body: bytes.isEmpty ? .empty() : .bytes(bytes), remoteAddress: "127.0.0.1:1")
        let response = await responder.respond(to: request)
        var collected: [UInt8] = []
        switch response.body {
        case .empty: break
        case .bytes(let b): collected = b
        case .stream: break
        }
        return Answer(status: response.status, headers: response.headers, body: collected)
    }
}

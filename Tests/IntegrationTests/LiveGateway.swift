import Auth
import Foundation
import Postgres
import S3
import TransferEngine

@testable import Adapters
@testable import Gateway
@testable import TransferGateway

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A gateway running in-process on a free port with the real stack's settings (tests only).
final class LiveGateway: @unchecked Sendable {
    let app: GatewayApp
    let port: Int
    let configuration: Configuration
    let logs = MemorySink()

    /// `deployment`: what `GatewayApp.prepareDatabase` read, as `serve` passes it (the shared link
    /// secret); without, links are signed with a key of this instance alone.
    init(deployment: GatewayApp.Deployment = .init(), _ tweak: (inout Configuration) -> Void = { _ in }) throws {
        var c = try Configuration.fromEnvironment(ProcessInfo.processInfo.environment)
        c.port = 0
        tweak(&c)
        configuration = c
        app = try GatewayApp(configuration: c, logger: Logger(level: .info, sink: logs), deployment: deployment)
        port = try app.server.start()
        // As `serve` does: job changes are heard (long polls, uploads paused mid-stream), and
        // events are delivered when a receiver is set.
        app.listener?.start()
        if let webhooks = app.webhooks { Task { await webhooks.run() } }
    }

    func stop() async {
        await app.webhooks?.stop()
        await app.server.shutdown(grace: 1) { [app] in app.changes.close() }
        app.listener?.stop()
    }

    func token(_ subject: String, roles: [String] = [], ttl: Int = 600) -> String {
        TokenMinter.hs256(
            secret: Array((configuration.jwtSecret ?? "").utf8), subject: subject,
            issuedAt: Int(Date().timeIntervalSince1970), ttl: ttl, roles: roles)
    }

    struct Answer {
        let status: Int
        let json: [String: Any]
        let headers: [AnyHashable: Any]
        let body: Data

        /// The header `name`, matched without regard to case.
        func header(_ name: String) -> String? {
            headers.first { ($0.key as? String)?.lowercased() == name.lowercased() }?.value as? String
        }
    }

    func request(
        _ method: String, _ path: String, token: String? = nil, json: [String: Any]? = nil,
        rawBody: Data? = nil, headers: [String: String] = [:]
    ) async throws -> Answer {
        var request = URLRequest(url: URL(string: "http://127.0.0.1:\(port)\(path)")!)
        request.httpMethod = method
        if let token { request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization") }
        if let json {
            request.httpBody = try JSONSerialization.data(withJSONObject: json)
            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        }
        if let rawBody { request.httpBody = rawBody }
        for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
        let (data, response) = try await URLSession.shared.data(for: request)
        let http = response as! HTTPURLResponse
        let object = (try? JSONSerialization.jsonObject(with: data)) as? [String: Any] ?? [:]
        return Answer(status: http.statusCode, json: object, headers: http.allHeaderFields, body: data)
    }
}

/// Runs curl (a real outside client) and returns the HTTP status and body.
func curl(_ arguments: [String]) throws -> (status: Int, body: String) {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/curl")
    let marker = "\n--status--"
    process.arguments = ["-s", "-w", "\(marker)%{http_code}"] + arguments
    let pipe = Pipe()
    process.standardOutput = pipe
    try process.run()
    let output = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    process.waitUntilExit()
    guard let range = output.range(of: marker, options: .backwards) else { return (-1, output) }
    return (Int(output[range.upperBound...]) ?? -1, String(output[..<range.lowerBound]))
}

/// A pool on the live database, for test setup.
enum PostgresPoolFor {
    static func live() throws -> Postgres.PostgresPool {
        Postgres.PostgresPool(url: try Configuration.fromEnvironment(liveEnvironment).databaseURL ?? "", size: 1)
    }
}

extension TokenMinter {
    static func hs256Token(_ configuration: Configuration, subject: String) -> String {
        hs256(
            secret: Array((configuration.jwtSecret ?? "").utf8), subject: subject,
            issuedAt: Int(Date().timeIntervalSince1970), ttl: 600)
    }
}

/// Small JSON-over-HTTP calls to a gateway process.
enum HTTP {
    static func json(_ method: String, port: Int, path: String, token: String, body: [String: Any]?) async throws -> [String: Any] {
        var request = URLRequest(url: URL(string: "http://127.0.0.1:\(port)\(path)")!)
        request.httpMethod = method
        request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization")
        if let body {
            request.httpBody = try JSONSerialization.data(withJSONObject: body)
            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        }
        let (data, _) = try await URLSession.shared.data(for: request)
        return (try? JSONSerialization.jsonObject(with: data)) as? [String: Any] ?? [:]
    }
}

extension Janitor {
    /// A janitor over the live stack's adapters.
    init(client: S3Client, pool: Postgres.PostgresPool, ttlSeconds: Int, spool: DirectorySpool? = nil, downloadTTLSeconds: Int = 3600) {
        self.init(
            jobs: PostgresMaintenanceStore(pool: pool), clientUploads: PostgresClientUploadStore(pool: pool),
            jobStore: PostgresJobStore(pool: pool), bucket: S3BucketMaintenance(client: client), ttlSeconds: ttlSeconds,
            spool: spool, downloadTTLSeconds: downloadTTLSeconds)
    }
}

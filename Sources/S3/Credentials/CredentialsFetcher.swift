import Dispatch
import Foundation
import SigV4

/// Fetches one set of credentials from a `CredentialsSource`, on the S3 client's curl engine
/// (no thread of its own, nothing blocking on the cooperative pool). It never retries and
/// never logs: `CredentialsRefresher` decides when to ask again. Its errors name the provider
/// and what went wrong, never a token, key or header.
public struct CredentialsFetcher: Sendable {
    public let source: CredentialsSource
    let engine: CurlEngine
    /// For the local agents (the container endpoint, IMDS): a 1 s connect timeout keeps a start
    /// away from EC2 quick.
    let localOptions: CurlOptions
    /// For STS, across a network.
    let remoteOptions: CurlOptions

    /// A fetch that failed.
    public struct Failure: Error, Sendable, Equatable, CustomStringConvertible {
        public let description: String

        public init(_ description: String) {
            self.description = description
        }
    }

    init(source: CredentialsSource, engine: CurlEngine) {
        self.source = source
        self.engine = engine
        var local = CurlOptions()
        local.connectTimeoutMilliseconds = 1000
        local.totalTimeoutMilliseconds = 5000
        localOptions = local
        var remote = CurlOptions()
        remote.connectTimeoutMilliseconds = 5000
        remote.totalTimeoutMilliseconds = 15_000
        remoteOptions = remote
    }

    /// One fetch.
    public func fetch() async throws -> Credentials {
        switch source {
        case .fixed(let credentials): return credentials
        case .webIdentity(let settings): return try await webIdentity(settings)
        case .container(let settings): return try await container(settings)
        case .instanceMetadata(let endpoint): return try await instanceMetadata(endpoint)
        }
    }

    /// STS `AssumeRoleWithWebIdentity`, an unsigned POST of the form (the token stays out of
    /// the URL, so out of any access log).
    func webIdentity(_ settings: CredentialsSource.WebIdentity) async throws -> Credentials {
        let token = try await Self.readFile(settings.tokenFile, what: "the web identity token file")
        let form = URIEncoding.query([
            ("Action", "AssumeRoleWithWebIdentity"), ("Version", "2011-06-15"), ("RoleArn", settings.roleARN),
            ("RoleSessionName", settings.sessionName), ("WebIdentityToken", token),
        ])
        let url = settings.endpoint.hasSuffix("/") ? settings.endpoint : settings.endpoint + "/"
        let response = try await send(
            "POST", url, headers: [("Content-Type", "application/x-www-form-urlencoded"), ("Accept", "application/xml")],
            body: Array(form.utf8), options: remoteOptions, what: "STS")
        guard response.status == 200 else {
            let code = (try? XMLTree.parse(response.body))?.child("Error")?.text("Code")
            throw Failure("STS answered \(response.status)" + (code.map { " (\(CredentialsAnswer.safeWord($0)))" } ?? ""))
        }
        return try CredentialsAnswer.sts(response.body)
    }

    /// The container credentials endpoint (ECS task roles, EKS Pod Identity).
    func container(_ settings: CredentialsSource.Container) async throws -> Credentials {
        var headers: [(String, String)] = [("Accept", "application/json")]
        if let file = settings.authorizationTokenFile {
            headers.append(("Authorization", try await Self.readFile(file, what: "the container authorization token file")))
        } else if let token = settings.authorizationToken {
            headers.append(("Authorization", token))
        }
        let response = try await send("GET", settings.url, headers: headers, options: localOptions, what: "the container endpoint")
        guard response.status == 200 else { throw Failure("the container endpoint answered \(response.status)") }
        return try CredentialsAnswer.json(response.body, from: "the container endpoint")
    }

    /// One request; a header that cannot be sent (a control character in a token) is a failure
    /// that does not repeat the header.
    func send(
        _ method: String, _ url: String, headers: [(String, String)], body: [UInt8]? = nil, options: CurlOptions,
        what: String
    ) async throws -> CurlTransfer.Response {
        guard
            let transfer = CurlTransfer(
                method: method, url: url, headers: headers, source: body.map { .bytes($0) } ?? .none,
                sink: .memory(limit: 64 << 10), options: options)
        else {
            throw Failure("a header for \(what) cannot be sent (a control or non-ASCII character)")
        }
        do {
            return try await engine.perform(transfer)
        } catch let error as S3Error where error.kind == .transport {
            throw Failure("\(what) did not answer (\(error.code))")
        }
    }

    /// A small file's text, trimmed, read on a Dispatch thread (file reads block).
    static func readFile(_ path: String, what: String) async throws -> String {
        let text: String? = await withCheckedContinuation { continuation in
            DispatchQueue.global().async {
                let data = FileManager.default.contents(atPath: path)
                continuation.resume(returning: data.map { String(decoding: $0.prefix(64 << 10), as: UTF8.self) })
            }
        }
        guard let text else { throw Failure("cannot read \(what)") }
        let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !trimmed.isEmpty else { throw Failure("\(what) is empty") }
        return trimmed
    }
}

extension S3Client {
    /// A fetcher for `source` sharing this client's connections thread.
    public func credentialsFetcher(for source: CredentialsSource) -> CredentialsFetcher {
        CredentialsFetcher(source: source, engine: engine)
    }
}

import Auth
import Crypto
import Foundation
import Gateway
import S3

/// Keeps an identity provider's key set (`GATEWAY_JWT_JWKS_URL`) fresh, off the request path:
/// fetched at start, again when its `Cache-Control` max-age runs out (30 s to a day; 5 minutes
/// when it says nothing) or when a token names an unknown `kid` (at most every 30 s, `KeySet`),
/// and again every 10 s while the provider is down, the last good set staying in use.
public struct KeySetRefresher: Sendable {
    let keySet: KeySet
    let url: String
    let fetcher: URLFetcher
    let logger: Logger
    let now: @Sendable () -> Int

    public init(keySet: KeySet, url: String, fetcher: URLFetcher, logger: Logger, now: @escaping @Sendable () -> Int) {
        self.keySet = keySet
        self.url = url
        self.fetcher = fetcher
        self.logger = logger
        self.now = now
    }

    /// Runs until cancelled.
    public func run() async {
        var retry = 0
        while !Task.isCancelled {
            let wait: Int
            do {
                let (keys, maxAge) = try await fetch()
                keySet.replace(with: keys, expiresAt: now() + maxAge)
                logger.info("key set fetched", ["keys": .int(keys.count), "maxAgeSeconds": .int(maxAge)])
                wait = maxAge
                retry = 0
            } catch {
                retry += 1
                // Logged once per outage, then every tenth try: the provider's URL is the operator's.
                if retry == 1 || retry % 10 == 0 {
                    logger.warn("key set fetch failed; the last good set stays in use", ["tries": .int(retry)])
                }
                wait = 10
            }
            await keySet.waitForRequest(seconds: wait)
        }
    }

    /// One fetch: the usable keys and how long the answer may be kept.
    func fetch() async throws -> ([String: PublicKey], Int) {
        let response = try await fetcher.send(
            "GET", url: url, headers: [("Accept", "application/json")],
            sink: .memory(limit: 1 << 20))
        guard response.status == 200 else { throw PublicKey.LoadError(description: "the key set answered \(response.status)") }
        let keys = try KeySet.parse(response.body)
        guard !keys.isEmpty else { throw PublicKey.LoadError(description: "the key set holds no usable key") }
        return (keys, Self.maxAge(response.header("cache-control")))
    }

    /// `max-age` of a `Cache-Control` value, kept within 30 s and a day; 300 without one.
    static func maxAge(_ value: String?) -> Int {
        guard let value else { return 300 }
        for directive in value.split(separator: ",") {
            let parts = directive.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
            if parts.count == 2, parts[0].lowercased() == "max-age", let seconds = Int(parts[1]) {
                return min(max(seconds, 30), 86_400)
            }
        }
        return 300
    }
}

/// The identity provider's key set has arrived (tokens are refused until it does).
public struct KeySetCheck: DependencyCheck {
    let keySet: KeySet
    public var name: String { "jwks" }

    public init(keySet: KeySet) {
        self.keySet = keySet
    }

    public func check(timeout: Int) async -> String? {
        keySet.isLoaded ? nil : "the key set has not arrived"
    }
}

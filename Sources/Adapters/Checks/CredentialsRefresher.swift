import Gateway
import S3
import SigV4
import Synchronization
import TransferEngine

/// Keeps the S3 credentials fresh, off the request path: a background task fetches them from
/// their `CredentialsSource` when `CredentialsRefresh` says (well before they end), hands them
/// to the S3 client (`S3Client.useCredentials`), and on a failure keeps the last good ones in
/// use and tries again with backoff. Requests only ever read the client's current credentials.
/// Logs name the source and the failure, never a key, token or URL.
public final class CredentialsRefresher: Sendable {
    /// The source's word (`CredentialsSource.name`), for logs and `/readyz`.
    public let sourceName: String
    let fetch: @Sendable () async throws -> Credentials
    let use: @Sendable (Credentials) -> Void
    let logger: Logger
    let clock: any EngineClock
    /// Static credentials: held, never fetched.
    public let isFixed: Bool
    private let state: Mutex<CredentialsRefresh>

    /// Fetches with `fetch`, hands what it gets to `use`; `clock` counts milliseconds.
    public init(
        sourceName: String, fetch: @escaping @Sendable () async throws -> Credentials,
        use: @escaping @Sendable (Credentials) -> Void, logger: Logger, clock: any EngineClock = SystemClock(),
        fixed: Bool = false
    ) {
        self.isFixed = fixed
        self.sourceName = sourceName
        self.fetch = fetch
        self.use = use
        self.logger = logger
        self.clock = clock
        state = Mutex(CredentialsRefresh(now: clock.now() / 1000))
    }

    /// Refreshes `client`'s credentials from `source`. Static credentials are held from the
    /// start and never fetched.
    public convenience init(client: S3Client, source: CredentialsSource, logger: Logger, clock: any EngineClock = SystemClock()) {
        let fetcher = client.credentialsFetcher(for: source)
        self.init(
            sourceName: source.name, fetch: { try await fetcher.fetch() }, use: { client.useCredentials($0) },
            logger: logger, clock: clock, fixed: source.isFixed)
        if case .fixed(let credentials) = source {
            let now = clock.now() / 1000
            state.withLock { _ = $0.fetched(credentials, now: now) }
        }
    }

    /// What the refresher holds now: the current credentials, failures, the next fetch.
    public var snapshot: CredentialsRefresh { state.withLock { $0 } }

    /// One fetch now. Returns whether usable credentials are in use afterwards (fetched now,
    /// or the last good ones still valid).
    @discardableResult
    public func refresh() async -> Bool {
        do {
            let credentials = try await fetch()
            let now = clock.now() / 1000
            if let end = credentials.expiration, end <= now {
                failed("the credentials fetched had already expired")
                return state.withLock { $0.isUsable(now: now) }
            }
            // In use, and said, before the schedule moves on (tests wait on the schedule).
            use(credentials)
            if let end = credentials.expiration {
                let next = CredentialsRefresh.refreshTime(expiration: end, obtainedAt: now)
                logger.info(
                    "S3 credentials fetched",
                    ["source": .string(sourceName), "expiresAt": .string(SigningTime.iso8601(end)), "nextRefreshSeconds": .int(next - now)])
            } else {
                logger.info("S3 credentials fetched", ["source": .string(sourceName)])
            }
            state.withLock { _ = $0.fetched(credentials, now: now) }
            return true
        } catch {
            failed(Self.describe(error))
            return state.withLock { $0.isUsable(now: clock.now() / 1000) }
        }
    }

    /// Runs until cancelled, or at once when the credentials never need fetching again.
    public func run() async {
        while !Task.isCancelled && !isFixed {
            guard let next = state.withLock({ $0.nextFetch }) else { return }
            do {
                try await clock.sleep(until: next * 1000)
            } catch {
                return
            }
            await refresh()
        }
    }

    /// Why the credentials cannot sign now, or nil when they can (for `/readyz`).
    public func problem() -> String? {
        let now = clock.now() / 1000
        return state.withLock { refresh -> String? in
            if refresh.isUsable(now: now) { return nil }
            let tries = refresh.failures
            if refresh.current == nil { return "none yet from \(sourceName) (\(tries) failed tries)" }
            return "expired; refreshing from \(sourceName) fails (\(tries) tries)"
        }
    }

    private func failed(_ reason: String) {
        let now = clock.now() / 1000
        let (failures, next, usable) = state.withLock { refresh in
            let next = refresh.failed(now: now)
            return (refresh.failures, next, refresh.isUsable(now: now))
        }
        // The first failure of an outage, then every tenth, and every one once nothing can sign.
        guard failures == 1 || failures % 10 == 0 || !usable else { return }
        logger.warn(
            usable ? "S3 credentials refresh failed; the last good ones stay in use" : "S3 credentials refresh failed; none usable",
            ["source": .string(sourceName), "reason": .string(reason), "tries": .int(failures), "retrySeconds": .int(next - now)])
    }

    /// A failure in words that hold no secret: the fetcher's own errors are written that way;
    /// anything else is named by its type.
    public static func describe(_ error: any Error) -> String {
        switch error {
        case let failure as CredentialsFetcher.Failure: return failure.description
        case let unusable as CredentialsAnswer.Unusable: return unusable.description
        case let s3 as S3Error: return "\(s3.kind) \(s3.code)"
        default: return "\(type(of: error))"
        }
    }
}

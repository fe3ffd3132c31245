import Crypto
import Foundation
import Synchronization

/// An identity provider's signing keys (a JSON Web Key Set, RFC 7517 §5), by `kid`. The set is
/// replaced whole by whoever fetches it (`KeySetRefresher` in the adapters); tokens naming a
/// `kid` the set lacks ask for a fetch, at most one every `unknownKidInterval` seconds, so keys
/// rotate with no restart and a flood of made-up `kid`s costs the provider nothing. A failed
/// fetch leaves the last good set in use.
public final class KeySet: Sendable {
    private struct State {
        var keys: [String: PublicKey] = [:]
        /// Sets received since start-up.
        var generation = 0
        /// When the set must be fetched again (seconds since 1970), from its `Cache-Control`.
        var expiresAt = 0
        /// When a fetch for an unknown `kid` was last allowed.
        var lastUnknownKidFetch = Int.min / 2
        var waiters: [(after: Int, continuation: CheckedContinuation<Void, Never>)] = []
        var wanted: CheckedContinuation<Void, Never>?
        var wantedNow = false
    }
    private let state = Mutex(State())
    public static let unknownKidInterval = 30

    public init() {}

    /// Parses a key set's JSON: the usable signing keys by `kid` (keys without a `kid`, of
    /// another use, or of a type or curve the gateway does not verify are left out).
    public static func parse(_ bytes: [UInt8]) throws -> [String: PublicKey] {
        guard let object = try JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any],
              let list = object["keys"] as? [[String: Any]] else {
            throw PublicKey.LoadError(description: "not a JSON Web Key Set")
        }
        var keys: [String: PublicKey] = [:]
        for jwk in list {
            guard let kid = jwk["kid"] as? String, !kid.isEmpty, kid.utf8.count <= 256,
                  (jwk["use"] as? String).map({ $0 == "sig" }) ?? true,
                  let key = try? PublicKey(jwk: jwk) else { continue }
            keys[kid] = key
        }
        return keys
    }

    /// The key of `kid`, if the set has it.
    public func key(_ kid: String) -> PublicKey? { state.withLock { $0.keys[kid] } }

    /// Whether a set has arrived since start-up.
    public var isLoaded: Bool { generation > 0 }

    /// Sets received since start-up.
    public var generation: Int { state.withLock { $0.generation } }

    /// The fetched set, to keep until `expiresAt`; wakes whoever waits for it.
    public func replace(with keys: [String: PublicKey], expiresAt: Int) {
        let waiters = state.withLock { s -> [(after: Int, continuation: CheckedContinuation<Void, Never>)] in
            s.keys = keys
            s.generation += 1
            s.expiresAt = expiresAt
            defer { s.waiters = [] }
            return s.waiters
        }
        for waiter in waiters { waiter.continuation.resume() }
    }

    /// When the set should be fetched again.
    public var expiresAt: Int { state.withLock { $0.expiresAt } }

    /// A token named `kid`, which the set lacks: asks for a fetch unless one was asked for in
    /// the last `unknownKidInterval` seconds. Returns whether it asked.
    @discardableResult
    public func unknownKid(_ kid: String, now: Int) -> Bool {
        let (asked, wake) = state.withLock { s -> (Bool, CheckedContinuation<Void, Never>?) in
            guard s.keys[kid] == nil, now - s.lastUnknownKidFetch >= Self.unknownKidInterval else { return (false, nil) }
            s.lastUnknownKidFetch = now
            s.wantedNow = true
            defer { s.wanted = nil }
            return (true, s.wanted)
        }
        wake?.resume()
        return asked
    }

    /// For the fetcher: returns when a fetch is asked for, or after `seconds`.
    public func waitForRequest(seconds: Int) async {
        await withTaskGroup(of: Void.self) { group in
            group.addTask {
                await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                    let now = self.state.withLock { s -> Bool in
                        if s.wantedNow || Task.isCancelled { return true }
                        s.wanted = continuation
                        return false
                    }
                    if now { continuation.resume() }
                }
            }
            group.addTask { try? await Task.sleep(for: .seconds(max(1, seconds))) }
            await group.next()
            group.cancelAll()
            // The timer won: nobody will resume the parked wait, so it is resumed here.
            let parked = state.withLock { s -> CheckedContinuation<Void, Never>? in
                defer { s.wanted = nil }
                return s.wanted
            }
            parked?.resume()
        }
        state.withLock { $0.wantedNow = false }
    }

    /// Waits until a set newer than `generation` arrives, at most `milliseconds` (a cold start
    /// waits once; a request whose `kid` asked for a fetch waits for it).
    public func waitForSet(after generation: Int, milliseconds: Int) async {
        await withTaskGroup(of: Void.self) { group in
            group.addTask {
                await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                    let done = self.state.withLock { s -> Bool in
                        if s.generation > generation { return true }
                        s.waiters.append((generation, continuation))
                        return false
                    }
                    if done { continuation.resume() }
                }
            }
            group.addTask { try? await Task.sleep(for: .milliseconds(milliseconds)) }
            await group.next()
            group.cancelAll()
            // Past the bound the waits still parked are let go (a later set resumes nobody twice).
            let left = state.withLock { s -> [(after: Int, continuation: CheckedContinuation<Void, Never>)] in
                defer { s.waiters = [] }
                return s.waiters
            }
            for waiter in left { waiter.continuation.resume() }
        }
    }
}

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
        var waiters: [Int: CheckedContinuation<Void, Never>] = [:]
        var nextWaiter = 0
        /// Waits whose bound passed before they parked.
        var ended = Set<Int>()
        var wanted: CheckedContinuation<Void, Never>?
        var wantedNow = false
        /// The fetcher's current wait has ended (its timer ran before it parked).
        var fetcherWaitOver = false
    }
    private let state = Mutex(State())
    /// `State.generation`, readable without the lock: every remembered verification compares
    /// it (`VerifiedTokenCache`), on every request.
    private let published = Atomic<Int>(0)
    public static let unknownKidInterval = 30

    public init() {}

    /// Parses a key set's JSON: the usable signing keys by `kid` (keys without a `kid`, of
    /// another use, or of a type or curve the gateway does not verify are left out).
    public static func parse(_ bytes: [UInt8]) throws -> [String: PublicKey] {
        guard let object = try JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any],
            let list = object["keys"] as? [[String: Any]]
        else {
            throw PublicKey.LoadError(description: "not a JSON Web Key Set")
        }
        var keys: [String: PublicKey] = [:]
        for jwk in list {
            guard let kid = jwk["kid"] as? String, !kid.isEmpty, kid.utf8.count <= 256,
                (jwk["use"] as? String).map({ $0 == "sig" }) ?? true,
                let key = try? PublicKey(jwk: jwk)
            else { continue }
            keys[kid] = key
        }
        return keys
    }

    /// The key of `kid`, if the set has it.
    public func key(_ kid: String) -> PublicKey? { state.withLock { $0.keys[kid] } }

    /// The key of `kid` and the generation of the set it was read from, read together: a
    /// verification made with it holds only while that set is the current one.
    public func keyWithGeneration(_ kid: String) -> (key: PublicKey, generation: Int)? {
        state.withLock { s in s.keys[kid].map { ($0, s.generation) } }
    }

    /// The current set's generation, without taking the lock.
    public var currentGeneration: Int { published.load(ordering: .acquiring) }

    /// Whether a set has arrived since start-up.
    public var isLoaded: Bool { generation > 0 }

    /// Sets received since start-up.
    public var generation: Int { state.withLock { $0.generation } }

    /// The fetched set, to keep until `expiresAt`; wakes whoever waits for it. Verifications
    /// remembered under the set it replaces are checked again on their next use, so a token
    /// whose `kid` left the set is refused from then on.
    public func replace(with keys: [String: PublicKey], expiresAt: Int) {
        let waiters = state.withLock { s -> [CheckedContinuation<Void, Never>] in
            s.keys = keys
            s.generation += 1
            published.store(s.generation, ordering: .releasing)
            s.expiresAt = expiresAt
            defer { s.waiters = [:] }
            return Array(s.waiters.values)
        }
        for waiter in waiters { waiter.resume() }
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
        state.withLock { $0.fetcherWaitOver = false }
        await withTaskGroup(of: Void.self) { group in
            group.addTask {
                await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                    let now = self.state.withLock { s -> Bool in
                        if s.wantedNow || s.fetcherWaitOver || Task.isCancelled { return true }
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
                s.fetcherWaitOver = true
                defer { s.wanted = nil }
                return s.wanted
            }
            parked?.resume()
        }
        state.withLock { $0.wantedNow = false }
    }

    /// Whether a fetch for an unknown `kid` was asked for in the last few seconds (a request
    /// naming the same new `kid` waits for that fetch too).
    public func fetchAskedRecently(now: Int) -> Bool {
        state.withLock { now - $0.lastUnknownKidFetch < 5 }
    }

    /// Waits until a set newer than `generation` arrives, at most `milliseconds` (a cold start
    /// waits once; a request whose `kid` asked for a fetch waits for it).
    public func waitForSet(after generation: Int, milliseconds: Int) async {
        let id = state.withLock { s -> Int in
            s.nextWaiter += 1
            return s.nextWaiter
        }
        await withTaskGroup(of: Void.self) { group in
            group.addTask {
                await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                    let done = self.state.withLock { s -> Bool in
                        // Already there, or this wait already ended (its timer ran first).
                        if s.generation > generation || s.ended.contains(id) { return true }
                        s.waiters[id] = continuation
                        return false
                    }
                    if done { continuation.resume() }
                }
            }
            group.addTask { try? await Task.sleep(for: .milliseconds(milliseconds)) }
            await group.next()
            group.cancelAll()
            // This wait's own entry only: others keep waiting to their own bounds. An entry
            // not parked yet is marked so it will not park.
            let parked = state.withLock { s -> CheckedContinuation<Void, Never>? in
                s.ended.insert(id)
                return s.waiters.removeValue(forKey: id)
            }
            parked?.resume()
        }
        state.withLock { _ = $0.ended.remove(id) }
    }
}

import Synchronization

/// Remembers tokens that verified, so a client polling with the same token does not pay for
/// the signature check and JSON parsing on every request. Time rules are still applied on every
/// hit; only the signature and claims parsing are skipped. Bounded: when full it starts over.
public final class VerifiedTokenCache: Sendable {
    struct Entry: Sendable {
        let identity: Identity
        let expiry: Double
        let notBefore: Double?
    }

    /// Keyed by the token's bytes: `String` equality would let canonically equivalent
    /// spellings (a KELVIN SIGN for a K) hit an entry.
    private let entries = Mutex<[[UInt8]: Entry]>([:])
    private let capacity: Int

    public init(capacity: Int = 10_000) {
        self.capacity = capacity
    }

    func lookup(_ token: String) -> Entry? {
        let key = Array(token.utf8)
        return entries.withLock { $0[key] }
    }

    func store(_ token: String, _ entry: Entry) {
        let key = Array(token.utf8)
        entries.withLock { map in
            if map.count >= capacity { map.removeAll(keepingCapacity: true) }
            map[key] = entry
        }
    }
}

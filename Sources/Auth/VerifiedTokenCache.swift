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

    private let entries = Mutex<[String: Entry]>([:])
    private let capacity: Int

    public init(capacity: Int = 10_000) {
        self.capacity = capacity
    }

    func lookup(_ token: String) -> Entry? {
        entries.withLock { $0[token] }
    }

    func store(_ token: String, _ entry: Entry) {
        entries.withLock { map in
            if map.count >= capacity { map.removeAll(keepingCapacity: true) }
            map[token] = entry
        }
    }
}

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

    /// A token's bytes as a key: `String` equality would let canonically equivalent spellings
    /// (a KELVIN SIGN for a K) hit an entry, and `[UInt8]`'s own hashing feeds the hasher one
    /// byte at a time.
    struct Key: Hashable, Sendable {
        let bytes: [UInt8]

        func hash(into hasher: inout Hasher) {
            bytes.withUnsafeBytes { hasher.combine(bytes: $0) }
        }

        static func == (a: Key, b: Key) -> Bool {
            a.bytes.count == b.bytes.count
                && a.bytes.withUnsafeBytes { x in b.bytes.withUnsafeBytes { y in x.elementsEqual(y) } }
        }
    }

    private let entries = Mutex<[Key: Entry]>([:])
    private let capacity: Int

    public init(capacity: Int = 10_000) {
        self.capacity = capacity
    }

    func lookup(_ token: String) -> Entry? {
        let key = Key(bytes: Array(token.utf8))
        return entries.withLock { $0[key] }
    }

    func store(_ token: String, _ entry: Entry) {
        let key = Key(bytes: Array(token.utf8))
        entries.withLock { map in
            if map.count >= capacity { map.removeAll(keepingCapacity: true) }
            map[key] = entry
        }
    }
}

import Foundation
import Striped
import Synchronization

/// Remembers tokens that verified, so a client polling with the same token does not pay for
/// the signature check and JSON parsing on every request. Time rules are still applied on every
/// hit; only the signature and claims parsing are skipped. A token verified with a key of the
/// provider's key set is remembered with that set's generation and verified again once the set
/// is replaced (`JWTVerifier`), so a key that leaves the set takes its tokens with it.
///
/// Direct-mapped and bounded: a token's slot comes from the last bytes of its signature
/// (random for any token that verified), a hit needs the stored token byte for byte, and a new
/// token takes its slot's place. Tokens crafted to share a slot only evict each other, which
/// costs a verification, never a wrong answer.
///
/// Striped by thread: each thread (an event loop, usually) looks in its own table under its own
/// lock, so threads answering at once do not pass one lock between their cores. The stripes
/// share `capacity` between them, so the memory bound is the same as one table's.
public final class VerifiedTokenCache: Sendable {
    struct Entry: Sendable {
        let identity: Identity
        let expiry: Double
        let notBefore: Double?
        /// The generation of the key set whose key verified it; nil for the configured keys.
        var keySetGeneration: Int? = nil
    }

    private struct Slot: Sendable {
        /// The token's bytes: compared as bytes, since `String` equality would let canonically
        /// equivalent spellings (a KELVIN SIGN for a K) hit an entry.
        var token: [UInt8]
        var entry: Entry
    }

    private let stripes: Striped<[Slot?]>
    private let slotCount: Int

    public init(capacity: Int = 4096, stripes: Int = 4) {
        let stripeCount = max(1, min(stripes, capacity))
        let slotCount = max(1, capacity / stripeCount)
        self.slotCount = slotCount
        self.stripes = Striped(count: stripeCount) { Array(repeating: nil, count: slotCount) }
    }

    func lookup(_ token: some StringProtocol) -> Entry? {
        var token = Substring(token)
        return token.withUTF8 { bytes in
            guard !bytes.isEmpty else { return nil }
            let index = slotIndex(bytes)
            return stripes.withLocalLock { slots -> Entry? in
                guard let slot = slots[index], slot.token.count == bytes.count,
                    slot.token.withUnsafeBufferPointer({ memcmp($0.baseAddress!, bytes.baseAddress!, bytes.count) == 0 })
                else { return nil }
                return slot.entry
            }
        }
    }

    func store(_ token: String, _ entry: Entry) {
        var token = token
        token.withUTF8 { bytes in
            let slot = Slot(token: Array(bytes), entry: entry)
            let index = slotIndex(bytes)
            stripes.withLocalLock { $0[index] = slot }
        }
    }

    /// The last eight bytes (the end of the signature), folded onto the slots.
    private func slotIndex(_ bytes: UnsafeBufferPointer<UInt8>) -> Int {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in bytes.suffix(8) { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
        return Int(hash % UInt64(slotCount))
    }
}

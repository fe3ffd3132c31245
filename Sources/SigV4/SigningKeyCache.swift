import Crypto
import Striped
import Synchronization

/// The last signing key derived, by date, region, service and secret: the key changes once a
/// day, and deriving it costs four HMACs on every request otherwise. Kept made ready for
/// HMAC (its pads absorbed), which spares each signature two more blocks of SHA-256.
///
/// One slot per thread (by a hash of the thread), each its own lock and its own copy of the
/// key held inline: threads signing at once neither wait for each other nor bounce one lock
/// or one array's reference count between their cores.
public final class SigningKeyCache: Sendable {
    private struct Slot: Sendable {
        var day = Int.min
        var region = ""
        var service = ""
        /// Part of the key's identity: rotated credentials must not reuse the old key. Held as
        /// the `Credentials` that hold it already are; never printed.
        var secret = ""
        var key: HMACKey?

        func matches(day: Int, region: String, service: String, secret: String) -> Bool {
            self.day == day && self.region == region && self.service == service && self.secret == secret
        }
    }

    private let slots = Striped(count: 8) { Slot() }

    public init() {}

    /// The key for `time`'s day, derived with `derive` on a miss.
    func key(
        _ time: SigningTime, region: String, service: String, secret: String, derive: () -> HMACKey
    ) -> HMACKey {
        let day = time.day
        let cached = slots.withLocalLock { slot -> HMACKey? in
            slot.matches(day: day, region: region, service: service, secret: secret) ? slot.key : nil
        }
        if let cached { return cached }
        let derived = derive()
        slots.withLocalLock { $0 = Slot(day: day, region: region, service: service, secret: secret, key: derived) }
        return derived
    }
}

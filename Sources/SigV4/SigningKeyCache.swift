import Striped
import Synchronization

/// The last signing key derived, by date, region, service and secret: the key changes once a
/// day, and deriving it costs four HMACs on every request otherwise.
///
/// One slot per thread (by a hash of the thread), each its own lock and its own copy of the
/// key's 32 bytes held inline: threads signing at once neither wait for each other nor bounce
/// one lock or one array's reference count between their cores.
public final class SigningKeyCache: Sendable {
    private struct Slot: Sendable {
        var day = Int.min
        var region = ""
        var service = ""
        /// Part of the key's identity: rotated credentials must not reuse the old key. Held as
        /// the `Credentials` that hold it already are; never printed.
        var secret = ""
        var key: (UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0)

        func matches(day: Int, region: String, service: String, secret: String) -> Bool {
            self.day == day && self.region == region && self.service == service && self.secret == secret
        }
    }

    private let slots = Striped(count: 8) { Slot() }

    public init() {}

    /// Calls `body` with the key for `time`'s day, derived with `derive` (32 bytes) on a miss.
    func withKey<R>(
        _ time: SigningTime, region: String, service: String, secret: String, derive: () -> [UInt8],
        _ body: (UnsafeRawBufferPointer) -> R
    ) -> R {
        let day = time.day
        var key = slots.withLocalLock { slot -> (UInt64, UInt64, UInt64, UInt64)? in
            slot.matches(day: day, region: region, service: service, secret: secret) ? slot.key : nil
        }
        if key == nil {
            var derived: (UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0)
            let bytes = derive()
            precondition(bytes.count == 32, "a SigV4 signing key is 32 bytes")
            withUnsafeMutableBytes(of: &derived) { $0.copyBytes(from: bytes) }
            slots.withLocalLock { $0 = Slot(day: day, region: region, service: service, secret: secret, key: derived) }
            key = derived
        }
        return withUnsafeBytes(of: key!) { body($0) }
    }
}

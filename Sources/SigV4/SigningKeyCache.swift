import Synchronization

/// The last signing key derived, by date, region, service and secret: the key changes once a
/// day, and deriving it costs four HMACs on every request otherwise.
public final class SigningKeyCache: Sendable {
    private struct Slot: Sendable {
        var date = ""
        var region = ""
        var service = ""
        /// Part of the key's identity: rotated credentials must not reuse the old key. Held as
        /// the `Credentials` that hold it already are; never printed.
        var secret = ""
        var key: [UInt8] = []

        func matches(date: String, region: String, service: String, secret: String) -> Bool {
            self.date == date && self.region == region && self.service == service && self.secret == secret
        }
    }

    private let slot = Mutex(Slot())

    public init() {}

    func key(date: String, region: String, service: String, secret: String, derive: () -> [UInt8]) -> [UInt8] {
        if let hit = slot.withLock({ $0.matches(date: date, region: region, service: service, secret: secret) ? $0.key : nil }) {
            return hit
        }
        let key = derive()
        slot.withLock { $0 = Slot(date: date, region: region, service: service, secret: secret, key: key) }
        return key
    }
}

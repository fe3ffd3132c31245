import Synchronization

/// The last signing key derived, by date, region, service and secret: the key changes once a
/// day, and deriving it costs four HMACs on every request otherwise.
public final class SigningKeyCache: Sendable {
    private struct Slot: Sendable {
        var scope = ""
        var key: [UInt8] = []
    }

    private let slot = Mutex(Slot())

    public init() {}

    func key(date: String, region: String, service: String, secret: String, derive: () -> [UInt8]) -> [UInt8] {
        // The secret is part of the identity of the key but never stored: compare by its hash value.
        let scope = "\(date)/\(region)/\(service)/\(secret.hashValue)"
        if let hit = slot.withLock({ $0.scope == scope ? $0.key : nil }) { return hit }
        let key = derive()
        slot.withLock { $0 = Slot(scope: scope, key: key) }
        return key
    }
}

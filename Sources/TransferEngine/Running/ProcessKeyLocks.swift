import Foundation

/// `KeyLocks` within one process: for a gateway without PostgreSQL (one instance), and the
/// twin of the PostgreSQL locks in tests. Waiters are served in order of arrival.
public actor ProcessKeyLocks: KeyLocks {
    private var held: [String: String] = [:]
    private var waiters: [String: [(holder: String, resume: CheckedContinuation<Void, Never>)]] = [:]

    public init() {}

    public func lock(_ key: String) async throws -> KeyLockToken {
        let holder = UUID().uuidString
        if held[key] == nil {
            held[key] = holder
        } else {
            await withCheckedContinuation { waiters[key, default: []].append((holder, $0)) }
        }
        return KeyLockToken(key: key, holder: holder)
    }

    public func unlock(_ token: KeyLockToken) {
        guard held[token.key] == token.holder else { return }
        guard var queue = waiters[token.key], !queue.isEmpty else {
            held[token.key] = nil
            return
        }
        let next = queue.removeFirst()
        waiters[token.key] = queue.isEmpty ? nil : queue
        held[token.key] = next.holder
        next.resume.resume()
    }
}

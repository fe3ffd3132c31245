import Gateway
import Synchronization

/// The idempotency keys' twin: claims and answers in memory; keys never expire.
public final class InMemoryIdempotencyStore: IdempotencyStore {
    private struct Entry {
        let fingerprint: String
        var answer: StoredAnswer?
    }
    private let entries = Mutex<[String: Entry]>([:])

    public init() {}

    private static func id(_ owner: String, _ scope: String, _ key: String) -> String { "\(owner)\n\(scope)\n\(key)" }

    public func claim(owner: String, scope: String, key: String, fingerprint: String, lifetimeSeconds: Int) async throws -> IdempotencyClaim {
        entries.withLock { e in
            let id = Self.id(owner, scope, key)
            guard let entry = e[id] else {
                e[id] = Entry(fingerprint: fingerprint)
                return .claimed
            }
            if let answer = entry.answer { return .answered(answer, fingerprint: entry.fingerprint) }
            return .inProgress(fingerprint: entry.fingerprint)
        }
    }

    public func record(owner: String, scope: String, key: String, answer: StoredAnswer) async throws {
        entries.withLock { $0[Self.id(owner, scope, key)]?.answer = answer }
    }

    public func release(owner: String, scope: String, key: String) async throws {
        entries.withLock { e in
            let id = Self.id(owner, scope, key)
            if e[id]?.answer == nil { e[id] = nil }
        }
    }
}

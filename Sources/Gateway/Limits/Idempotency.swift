import Crypto
import HTTPServer

/// `Idempotency-Key` on the create routes (`POST /v1/jobs`, `/v1/uploads`, `/v1/tus/`): a phone
/// that retries a create after a lost answer gets the first answer again, with the same id,
/// instead of a second job. The key is the identity's, per route, for 24 hours; the same key
/// with another body is 422 `idempotency_key_reused`.
struct Idempotency: Sendable {
    let store: any IdempotencyStore
    static let lifetimeSeconds = 86_400
    /// How long a retry waits for the first request with its key to finish.
    static let waitMilliseconds = 10_000

    /// The request's key, when it sent one: 1–255 printable ASCII characters.
    static func key(of http: HTTPRequest) throws(APIError) -> String? {
        guard let key = http.headers["idempotency-key"] else { return nil }
        guard (1...255).contains(key.utf8.count), key.utf8.allSatisfy({ $0 >= 0x21 && $0 <= 0x7E }) else {
            throw APIError.validation("Idempotency-Key must be 1–255 printable ASCII characters.")
        }
        return key
    }

    /// Runs `create` once per key: a repeat with the same `request` bytes is answered by
    /// `replay` from what the first made (its `Location`); without a key, `create` just runs.
    func run(
        _ http: HTTPRequest, owner: String, scope: String, request: [UInt8],
        replay: (StoredAnswer) async throws -> HTTPResponse,
        create: () async throws -> HTTPResponse
    ) async throws -> HTTPResponse {
        guard let key = try Self.key(of: http) else { return try await create() }
        let fingerprint = Digest.hex(Digest.sha256(request))
        let deadline = ContinuousClock.now + .milliseconds(Self.waitMilliseconds)
        while true {
            let store = self.store
            let claim = try await Shield.run {
                try await store.claim(owner: owner, scope: scope, key: key, fingerprint: fingerprint, lifetimeSeconds: Self.lifetimeSeconds)
            }
            switch claim {
            case .claimed:
                let response: HTTPResponse
                do {
                    response = try await create()
                } catch {
                    try? await Shield.run { try await store.release(owner: owner, scope: scope, key: key) }
                    throw error
                }
                // Only a success is kept: a refused request made nothing, and its retry may succeed.
                guard (200..<300).contains(response.status) else {
                    try? await Shield.run { try await store.release(owner: owner, scope: scope, key: key) }
                    return response
                }
                // What was made is kept, not the answer: a repeat is answered from the thing as it
                // is now (fresh part URLs and links, none stored).
                let answer = StoredAnswer(status: response.status, location: response.headers["location"], body: [])
                try await Shield.run { try await store.record(owner: owner, scope: scope, key: key, answer: answer) }
                return response
            case .answered(let answer, let first):
                guard first == fingerprint else { throw Self.reused }
                var response = try await replay(answer)
                response.headers.add("Idempotent-Replayed", "true")
                return response
            case .inProgress(let first):
                guard first == fingerprint else { throw Self.reused }
                guard ContinuousClock.now < deadline else {
                    throw APIError(
                        .serviceUnavailable, "A request with this Idempotency-Key is still being served; try again.", retryAfter: 1)
                }
                try await Task.sleep(for: .milliseconds(100))
            }
        }
    }

    static let reused = APIError(.idempotencyKeyReused, "This Idempotency-Key was used with another request body.")
}

import Foundation

/// The retries of one request under a `RetryPolicy`: each `wait` sleeps the policy's delay for the
/// next attempt, or throws `retriesExhausted` (with the last cause) once the limit is reached.
struct Backoff: Sendable {
    let policy: RetryPolicy
    private(set) var attempt = 0

    init(policy: RetryPolicy) {
        self.policy = policy
    }

    mutating func wait(retryAfter: Double?, cause: String) async throws {
        guard let delay = policy.delay(attempt: attempt, retryAfter: retryAfter, unit: Double.random(in: 0..<1)) else {
            throw TransferError(.retriesExhausted, "gave up after \(attempt + 1) tries; last: \(cause)")
        }
        attempt += 1
        if delay > 0 { try await Task.sleep(nanoseconds: UInt64(delay * 1e9)) }
    }

    /// Progress was made: the next failure starts the count again.
    mutating func reset() { attempt = 0 }
}

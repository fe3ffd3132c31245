import Foundation
import Testing

@testable import TransferGatewayClient

/// Exponential backoff with full jitter, the limit, and Retry-After.
struct RetryPolicyTests {
    @Test func ceilingDoublesUpToTheCap() {
        let policy = RetryPolicy(limit: 10, base: 0.5, cap: 4)
        #expect(policy.delay(attempt: 0, unit: 1) == 0.5)
        #expect(policy.delay(attempt: 1, unit: 1) == 1)
        #expect(policy.delay(attempt: 2, unit: 1) == 2)
        #expect(policy.delay(attempt: 3, unit: 1) == 4)
        #expect(policy.delay(attempt: 9, unit: 1) == 4)
    }

    @Test func fullJitterSpansZeroToTheCeiling() {
        let policy = RetryPolicy(limit: 5, base: 1, cap: 30)
        #expect(policy.delay(attempt: 2, unit: 0) == 0)
        #expect(policy.delay(attempt: 2, unit: 0.25) == 1)
    }

    @Test(arguments: [0, 1, 3])
    func limitEndsTheRetries(limit: Int) {
        let policy = RetryPolicy(limit: limit)
        #expect(policy.delay(attempt: limit - 1, unit: 0.5) != nil || limit == 0)
        #expect(policy.delay(attempt: limit, unit: 0.5) == nil)
    }

    @Test func retryAfterIsHonouredWithinItsBound() {
        let policy = RetryPolicy(limit: 3, maxRetryAfter: 60)
        #expect(policy.delay(attempt: 0, retryAfter: 7, unit: 0) == 7)
        #expect(policy.delay(attempt: 0, retryAfter: 3600, unit: 0) == 60)
        #expect(policy.delay(attempt: 3, retryAfter: 7, unit: 0) == nil)
    }

    @Test func retryAfterReadsSecondsAndDates() {
        #expect(RetryPolicy.retryAfterSeconds("5") == 5)
        #expect(RetryPolicy.retryAfterSeconds(" 12 ") == 12)
        #expect(RetryPolicy.retryAfterSeconds(nil) == nil)
        #expect(RetryPolicy.retryAfterSeconds("soon") == nil)
        let now = Date(timeIntervalSince1970: 1_445_412_480)  // Wed, 21 Oct 2015 07:28:00 GMT
        #expect(RetryPolicy.retryAfterSeconds("Wed, 21 Oct 2015 07:28:30 GMT", now: now) == 30)
        #expect(RetryPolicy.retryAfterSeconds("Wed, 21 Oct 2015 07:27:00 GMT", now: now) == 0)
    }
}

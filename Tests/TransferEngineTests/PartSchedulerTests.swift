import Testing

@testable import TransferEngine

private func starts(_ actions: [PartScheduler.Action]) -> [Int] {
    actions.compactMap { if case .start(let part, _) = $0 { return part } else { return nil } }
}

@Test func neverMoreThanConcurrencyInFlight() {
    var s = PartScheduler(partCount: 12, concurrency: 5, retryLimit: 3, random: { 0.5 })
    #expect(starts(s.nextActions(now: 0)) == [1, 2, 3, 4, 5])
    #expect(s.nextActions(now: 0).isEmpty)
    s.partSucceeded(2)
    #expect(starts(s.nextActions(now: 1)) == [6])
    for part in [1, 3, 4, 5, 6] { s.partSucceeded(part) }
    #expect(starts(s.nextActions(now: 2)) == [7, 8, 9, 10, 11])
    for part in 7...11 { s.partSucceeded(part) }
    #expect(starts(s.nextActions(now: 3)) == [12])
    s.partSucceeded(12)
    #expect(s.nextActions(now: 4) == [.finish])
    #expect(s.phase == .finished)
}

@Test func retryableFailuresWaitTheirBackoffThenRetry() {
    var s = PartScheduler(
        partCount: 2, concurrency: 2, retryLimit: 2, backoff: Backoff(baseMilliseconds: 100, capMilliseconds: 10_000),
        random: { 0.5 })
    _ = s.nextActions(now: 0)
    #expect(s.partFailed(1, error: slowDown, now: 1000) == nil)
    #expect(s.nextWakeup == 1050)  // 0.5 × 100 ms
    #expect(s.nextActions(now: 1049).isEmpty)
    #expect(s.nextActions(now: 1050) == [.start(part: 1, attempt: 2)])
    #expect(s.partFailed(1, error: slowDown, now: 2000) == nil)
    #expect(s.nextWakeup == 2100)  // 0.5 × 200 ms
    #expect(s.nextActions(now: 2100) == [.start(part: 1, attempt: 3)])
    // The third failure exceeds retryLimit 2.
    #expect(s.partFailed(1, error: slowDown, now: 3000) == .fail(part: 1, failure: JobFailure(.retriesExhausted, cause: .throttled)))
    #expect(s.phase == .failed)
    #expect(s.nextActions(now: 4000).isEmpty)
}

@Test func nonRetryableFailureFailsAtOnce() {
    var s = PartScheduler(partCount: 3, concurrency: 1, retryLimit: 5, random: { 0 })
    _ = s.nextActions(now: 0)
    #expect(
        s.partFailed(1, error: TransferError(code: .accessDenied, retryable: false), now: 0)
            == .fail(part: 1, failure: JobFailure(.accessDenied)))
}

@Test func retryLimitZeroMeansNoRetry() {
    var s = PartScheduler(partCount: 1, concurrency: 1, retryLimit: 0, random: { 0 })
    _ = s.nextActions(now: 0)
    #expect(
        s.partFailed(1, error: TransferError(code: .storageUnavailable, retryable: true), now: 0)
            == .fail(part: 1, failure: JobFailure(.retriesExhausted, cause: .storageUnavailable)))
}

@Test func pauseStopsNewPartsAndResumeContinues() {
    var s = PartScheduler(partCount: 6, concurrency: 2, retryLimit: 1, random: { 0 })
    #expect(starts(s.nextActions(now: 0)) == [1, 2])
    s.pause()
    s.partSucceeded(1)
    s.partAbandoned(2)
    #expect(s.nextActions(now: 1).isEmpty, "no bytes move while paused")
    s.resume()
    #expect(starts(s.nextActions(now: 2)) == [2, 3])
}

@Test func resumeAfterACrashSkipsRecordedParts() {
    var s = PartScheduler(partCount: 5, concurrency: 5, retryLimit: 1, completed: [1, 2, 4], random: { 0 })
    #expect(starts(s.nextActions(now: 0)) == [3, 5])
    s.partSucceeded(3)
    s.partSucceeded(5)
    #expect(s.nextActions(now: 1) == [.finish])
}

@Test func everyPartAlreadyRecordedFinishesAtOnce() {
    var s = PartScheduler(partCount: 2, concurrency: 2, retryLimit: 1, completed: [1, 2], random: { 0 })
    #expect(s.nextActions(now: 0) == [.finish])
}

@Test func cancelStopsEverything() {
    var s = PartScheduler(partCount: 4, concurrency: 2, retryLimit: 3, random: { 0 })
    _ = s.nextActions(now: 0)
    s.cancel()
    #expect(s.nextActions(now: 1).isEmpty)
    #expect(s.partFailed(1, error: slowDown, now: 1) != nil, "no retries after cancel")
    #expect(s.phase == .canceled)
}

@Test(arguments: [(1, 200), (2, 400), (3, 800), (7, 12_800), (8, 20_000), (40, 20_000)])
func backoffCeilingDoublesToItsCap(retry: Int, ceiling: Int) {
    #expect(Backoff().ceiling(retry: retry) == ceiling)
    #expect(Backoff().delay(retry: retry, unit: 0) == 0)
    #expect(Backoff().delay(retry: retry, unit: 0.999_999_9) < ceiling)
}

private let slowDown = TransferError(code: .throttled, retryable: true)

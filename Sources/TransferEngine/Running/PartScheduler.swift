/// Decides which parts of a job move next: at most `concurrency` in flight, failed parts retried
/// (when a retry can help) up to `retryLimit` times after a backoff, nothing new while paused,
/// and the job's end once every part is done or one has failed for good.
///
/// A pure state machine: events in (`partSucceeded`, `partFailed`, `pause`, …), decisions out
/// (`nextActions(now:)`), time in milliseconds supplied by the caller. It does no I/O and holds
/// no clock, so the engine's behaviour is tested event by event.
public struct PartScheduler: Sendable {
    public enum Action: Sendable, Equatable {
        /// Transfer part `part` (1-based); `attempt` counts from 1.
        case start(part: Int, attempt: Int)
        /// Every part is done: complete the object.
        case finish
        /// A part failed for good: fail the job with this error.
        case fail(part: Int, failure: JobFailure)
    }

    public enum Phase: Sendable, Equatable {
        case running, paused, canceled, finished, failed
    }

    public let partCount: Int
    public let concurrency: Int
    public let retryLimit: Int
    public let backoff: Backoff
    public private(set) var phase = Phase.running

    private var pending: [Int]  // parts not started, lowest first
    private var inFlight: [Int: Int] = [:]  // part → attempt
    private var retryAt: [Int: (attempt: Int, at: Int)] = [:]
    private var done: Set<Int>
    private let random: @Sendable () -> Double

    /// `completed` are parts already recorded (after a restart); they are not sent again.
    public init(
        partCount: Int, concurrency: Int, retryLimit: Int, backoff: Backoff = Backoff(),
        completed: Set<Int> = [], random: @escaping @Sendable () -> Double = { Double.random(in: 0..<1) }
    ) {
        self.partCount = partCount
        self.concurrency = max(1, concurrency)
        self.retryLimit = max(0, retryLimit)
        self.backoff = backoff
        self.done = completed.filter { (1...partCount).contains($0) }
        self.pending = (1...max(1, partCount)).filter { !completed.contains($0) }
        self.random = random
    }

    public var completedParts: Set<Int> { done }
    public var partsInFlight: Int { inFlight.count }

    /// The earliest moment a waiting retry becomes due, if any (for the caller's timer).
    public var nextWakeup: Int? { retryAt.values.map(\.at).min() }

    /// What to do now. Call after every event and whenever `nextWakeup` passes.
    public mutating func nextActions(now: Int) -> [Action] {
        guard phase == .running else { return [] }
        if done.count == partCount && inFlight.isEmpty { phase = .finished; return [.finish] }
        var actions: [Action] = []
        // Due retries first (they hold the oldest bytes), then fresh parts, lowest first.
        for (part, retry) in retryAt.sorted(by: { $0.key < $1.key }) where retry.at <= now && inFlight.count < concurrency {
            retryAt[part] = nil
            inFlight[part] = retry.attempt
            actions.append(.start(part: part, attempt: retry.attempt))
        }
        while inFlight.count < concurrency, !pending.isEmpty {
            let part = pending.removeFirst()
            inFlight[part] = 1
            actions.append(.start(part: part, attempt: 1))
        }
        return actions
    }

    public mutating func partSucceeded(_ part: Int) {
        guard inFlight.removeValue(forKey: part) != nil else { return }
        done.insert(part)
    }

    /// A part failed. Retried after a backoff when `retryable` and attempts remain; otherwise
    /// the job fails (reported by the next `nextActions`… or here, at once).
    public mutating func partFailed(_ part: Int, error: TransferError, now: Int) -> Action? {
        guard let attempt = inFlight.removeValue(forKey: part) else { return nil }
        if error.retryable && attempt <= retryLimit && phase != .canceled {
            retryAt[part] = (attempt + 1, now + backoff.delay(retry: attempt, unit: random()))
            return nil
        }
        if phase == .running || phase == .paused { phase = .failed }
        return .fail(part: part, failure: JobFailure(error))
    }

    /// No new part starts; parts in flight are the caller's to stop or let finish.
    public mutating func pause() {
        if phase == .running { phase = .paused }
    }

    public mutating func resume() {
        if phase == .paused { phase = .running }
    }

    public mutating func cancel() {
        if phase == .running || phase == .paused { phase = .canceled }
    }

    /// A part that was in flight when the job paused or was interrupted goes back to the queue.
    public mutating func partAbandoned(_ part: Int) {
        guard inFlight.removeValue(forKey: part) != nil else { return }
        pending.insert(part, at: pending.firstIndex { $0 > part } ?? pending.endIndex)
    }
}

import Foundation

/// Counts one task's bytes: those done for good (`committed`) and those of requests in flight
/// (by a slot: a part number, or 0), keeps the task's `Progress` current, and sends `progress`
/// events at most every `interval` seconds (and always at the end).
final class ProgressReporter: Sendable {
    private struct Counts {
        var committed: Int64 = 0
        var inFlight: [Int: Int64] = [:]
        var lastSent: Double = 0
        var lastValue: Int64 = -1
    }

    let progress: Progress
    private let counts = Locked(Counts())
    private let emit: @Sendable (TransferEvent) -> Void
    private let interval: Double

    init(progress: Progress, interval: Double = 0.2, emit: @escaping @Sendable (TransferEvent) -> Void) {
        self.progress = progress
        self.interval = interval
        self.emit = emit
    }

    /// The size, once known.
    func setTotal(_ total: Int64) {
        progress.totalUnitCount = total
    }

    func setCommitted(_ bytes: Int64) {
        update {
            $0.committed = bytes; $0.inFlight = [:]
        }
    }

    func setInFlight(_ slot: Int, _ bytes: Int64) { update { $0.inFlight[slot] = bytes } }

    /// A request's bytes count for good.
    func commit(_ slot: Int, _ bytes: Int64) {
        update {
            $0.inFlight[slot] = nil
            $0.committed += bytes
        }
    }

    /// A request's bytes did not count (it failed; they will be sent again).
    func drop(_ slot: Int) { update { $0.inFlight[slot] = nil } }

    /// Sends the current figure now.
    func flush() { update(force: true) { _ in } }

    private func update(force: Bool = false, _ change: (inout Counts) -> Void) {
        let now = ProcessInfo.processInfo.systemUptime
        let send: Int64? = counts.withLock { counts in
            change(&counts)
            let value = counts.committed + counts.inFlight.values.reduce(0, +)
            guard value != counts.lastValue && (force || now - counts.lastSent >= interval) else { return nil }
            counts.lastSent = now
            counts.lastValue = value
            return value
        }
        let value = counts.withLock { $0.committed + $0.inFlight.values.reduce(0, +) }
        progress.completedUnitCount = value
        if let send {
            emit(.progress(completed: send, total: progress.totalUnitCount > 0 || send > 0 ? progress.totalUnitCount : nil))
        }
    }
}

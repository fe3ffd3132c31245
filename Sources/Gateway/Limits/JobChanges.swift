import Synchronization
import TransferEngine

/// Wakes the requests waiting for a job to change (long polls, event streams). Every instance
/// hears of every change through PostgreSQL's `NOTIFY` (one listening connection per instance),
/// so a waiter wakes whichever instance made the change, and nobody polls rows.
///
/// A waiter takes a `Ticket` before it reads the job, then waits on the ticket: a change that
/// lands between the read and the wait has already marked the ticket, so it is never missed.
public final class JobChanges: Sendable {
    private struct State {
        var tickets: [String: [Ticket]] = [:]
        var closed = false
        var live = false
    }

    private let state = Mutex(State())

    public init() {}

    /// Interest in the next change of `jobID`.
    public func ticket(for jobID: String) -> Ticket {
        let ticket = Ticket()
        let closed = state.withLock { s -> Bool in
            if !s.closed { s.tickets[jobID, default: []].append(ticket) }
            return s.closed
        }
        if closed { ticket.fire() }
        return ticket
    }

    /// `jobID` changed.
    public func notify(_ jobID: String) {
        let woken = state.withLock { $0.tickets.removeValue(forKey: jobID) } ?? []
        for ticket in woken { ticket.fire() }
    }

    /// Anything may have changed (the listener reconnected and may have missed some).
    public func notifyAll() {
        let woken = state.withLock { s -> [Ticket] in
            defer { s.tickets = [:] }
            return s.tickets.values.flatMap { $0 }
        }
        for ticket in woken { ticket.fire() }
    }

    /// Shutting down: every waiter answers now, and later waits do not wait.
    public func close() {
        state.withLock { $0.closed = true }
        notifyAll()
    }

    /// Whether changes are being heard now. While not, waiters look again every few seconds.
    public var isLive: Bool { state.withLock { $0.live } }

    public func setLive(_ live: Bool) { state.withLock { $0.live = live } }

    /// Drops the tickets nobody waits on any more (answered by their deadline).
    func forget(_ ticket: Ticket, of jobID: String) {
        state.withLock { s in
            s.tickets[jobID]?.removeAll { $0 === ticket }
            if s.tickets[jobID]?.isEmpty == true { s.tickets.removeValue(forKey: jobID) }
        }
    }

    /// Waits until `ticket` fires, `timeout` passes, or the task is cancelled (a client that
    /// hung up); returns whether it fired.
    public func wait(_ ticket: Ticket, for jobID: String, timeout: Duration) async -> Bool {
        let fired = await withTaskGroup(of: Bool.self) { group in
            group.addTask { await ticket.wait() }
            group.addTask {
                try? await Task.sleep(for: timeout)
                return false
            }
            let first = await group.next() ?? false
            group.cancelAll()
            return first
        }
        if !fired { forget(ticket, of: jobID) }
        return fired
    }
}

/// One waiter's interest in one change; fires once.
public final class Ticket: Sendable {
    private struct State {
        var fired = false
        var waiter: CheckedContinuation<Bool, Never>?
    }

    private let state = Mutex(State())

    func fire() {
        let waiter = state.withLock { s -> CheckedContinuation<Bool, Never>? in
            s.fired = true
            defer { s.waiter = nil }
            return s.waiter
        }
        waiter?.resume(returning: true)
    }

    /// True once fired; false when the waiting task is cancelled first.
    func wait() async -> Bool {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
                let now: Bool? = state.withLock { s in
                    if s.fired { return true }
                    if Task.isCancelled { return false }
                    s.waiter = continuation
                    return nil
                }
                if let now { continuation.resume(returning: now) }
            }
        } onCancel: {
            let waiter = state.withLock { s -> CheckedContinuation<Bool, Never>? in
                defer { s.waiter = nil }
                return s.waiter
            }
            waiter?.resume(returning: false)
        }
    }
}

extension JobChanges: JobSignals {
    /// Returns at the job's next announced change (or when the waiting task is cancelled).
    public func changed(_ id: String) async {
        let ticket = ticket(for: id)
        if await ticket.wait() == false { forget(ticket, of: id) }
    }
}

import Gateway
import Synchronization

/// The event feed's twin: events in memory, numbered per identity 1, 2, 3… as the PostgreSQL
/// triggers number them, and announced on `changes` as the trigger's `NOTIFY` does. Nothing
/// records on its own here (the in-memory stores have no triggers): a test records what it
/// needs with `record`. Time is `now`, milliseconds since 1970.
public final class InMemoryEventFeed: EventFeed {
    private struct State {
        var events: [String: [FeedEvent]] = [:]
        /// Each identity's last number, kept when its events are swept (PostgreSQL's counter rows).
        var counters: [String: Int64] = [:]
    }

    private let state = Mutex(State())
    private let changes: JobChanges?
    private let now: @Sendable () -> Int64

    public init(changes: JobChanges? = nil, now: @escaping @Sendable () -> Int64 = { 0 }) {
        self.changes = changes
        self.now = now
    }

    /// Records an event of `owner`'s and returns it, as a change to one of its jobs or uploads would.
    @discardableResult
    public func record(owner: String, type: String, subject: FeedEvent.Subject) -> FeedEvent {
        let time = now()
        let event = state.withLock { s -> FeedEvent in
            let next = (s.counters[owner] ?? 0) + 1
            s.counters[owner] = next
            let event = FeedEvent(sequence: next, type: type, createdAt: time, subject: subject)
            s.events[owner, default: []].append(event)
            return event
        }
        changes?.notify(EventFeedWake.key(owner))
        return event
    }

    public func record(owner: String, type: String, change: ObjectChange) async throws {
        record(owner: owner, type: type, subject: .object(change))
    }

    public func events(owner: String, after: Int64, limit: Int) async throws -> [FeedEvent] {
        state.withLock { s in Array((s.events[owner] ?? []).filter { $0.sequence > after }.prefix(limit)) }
    }

    public func latest(owner: String) async throws -> Int64 {
        state.withLock { $0.counters[owner] ?? 0 }
    }

    /// The numbering goes on after a sweep, as PostgreSQL's counter rows keep it.
    @discardableResult
    public func sweep(olderThanSeconds seconds: Int) async throws -> Int {
        let cutoff = now() - Int64(seconds) * 1000
        return state.withLock { s in
            var removed = 0
            for (owner, events) in s.events {
                let kept = events.filter { $0.createdAt >= cutoff }
                removed += events.count - kept.count
                s.events[owner] = kept
            }
            return removed
        }
    }
}

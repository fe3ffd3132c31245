import Synchronization

/// The parts of a streaming upload whose turn to be recorded has come, written together: the
/// last part in flight writes every one waiting, and so does any part once `interval`
/// milliseconds have passed since the last write. Parts that end close together (several in
/// flight at speed) cost one transaction, not one each; a part is never left waiting for
/// longer than the part after it takes, and the last one in flight writes at once, so a client
/// that pauses mid-body has its finished parts counted.
final class PartBatch: Sendable {
    private struct State {
        var waiting: [RecordedPart] = []
        var inFlight = 0
        var savedAt = Int.min / 2
    }

    private let state = Mutex(State())
    let interval: Int

    init(interval: Int) {
        self.interval = interval
    }

    /// A part on its way to S3.
    func launched() {
        state.withLock { $0.inFlight += 1 }
    }

    /// `part` is in S3 and every part before it is recorded or waiting: the parts to write now,
    /// in order (this one and those waiting), or none when a later part will write them.
    func turn(of part: RecordedPart, now: Int) -> [RecordedPart] {
        state.withLock { s in
            s.inFlight -= 1
            s.waiting.append(part)
            guard s.inFlight == 0 || now - s.savedAt >= interval else { return [] }
            s.savedAt = now
            defer { s.waiting = [] }
            return s.waiting
        }
    }

    /// A part that ended without its turn (it failed, or recording stopped).
    func ended() {
        state.withLock { $0.inFlight -= 1 }
    }
}

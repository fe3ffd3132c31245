import Synchronization
import TransferEngine

/// The blocks of one byte range of an object, in order, read ahead of the consumer: up to
/// `depth` ranged GETs (each pinned to `etag`) run at once, so the next blocks are arriving
/// while the current one is written to the client.
///
/// Every block is reserved from the memory budget, for the job's owner, before its read starts
/// and given back once it is written: the window grows a block at a time while there is room,
/// and `shrink()` (called while the client is not reading) drops the reads ahead, so a stalled
/// client holds one block, not a window. Whoever holds it calls `cancel()` when done.
final class ReadAhead: Sendable {
    /// A block read, with the budget it holds until it has been written.
    struct Block: Sendable {
        let bytes: [UInt8]
        let held: Reservation
    }

    private struct Pending {
        let start: Int64
        let task: Task<[UInt8], any Error>
        let held: Reservation
    }

    private struct State {
        var pending: [Pending] = []
        /// Where the next read starts.
        var nextOffset: Int64
        var cancelled = false
    }

    private let state: Mutex<State>
    private let objects: any ObjectStore
    private let budget: ByteBudget
    private let owner: String
    private let key: String
    private let etag: String
    private let end: Int64
    private let block: Int64
    private let depth: Int

    init(
        objects: any ObjectStore, budget: ByteBudget, owner: String, key: String, etag: String, from start: Int64, length: Int64,
        block: Int64, depth: Int
    ) {
        self.objects = objects
        self.budget = budget
        self.owner = owner
        self.key = key
        self.etag = etag
        self.end = start + length
        self.block = block
        self.depth = max(1, depth)
        state = Mutex(State(nextOffset: start))
    }

    /// Bytes of the read starting at `offset`.
    private func length(at offset: Int64) -> Int64 { min(block, end - offset) }

    /// Starts the first read, waiting at most `milliseconds` for its block of the budget; false
    /// when there is no room by then.
    func begin(waitingAtMost milliseconds: Int) async throws -> Bool {
        let first = state.withLock { $0.nextOffset }
        guard first < end else { return true }
        guard let held = try await budget.reserve(length(at: first), owner: owner, waitingAtMost: milliseconds) else { return false }
        state.withLock { s in
            launch(&s, held)
            fill(&s)
        }
        return true
    }

    /// A read of the next block with the budget it was given.
    private func launch(_ s: inout State, _ held: Reservation) {
        let range = s.nextOffset...(s.nextOffset + length(at: s.nextOffset) - 1)
        let objects = self.objects, key = self.key, etag = self.etag
        s.pending.append(Pending(start: range.lowerBound, task: Task { try await Self.read(objects, key, range, etag) }, held: held))
        s.nextOffset = range.upperBound + 1
    }

    /// More reads, up to `depth`, while the budget has room for them now.
    private func fill(_ s: inout State) {
        while !s.cancelled, s.pending.count < depth, s.nextOffset < end,
            let held = budget.tryReserve(length(at: s.nextOffset), owner: owner)
        {
            launch(&s, held)
        }
    }

    /// Tries a read that failed with a retryable error (S3's 5xx, a reset) again, up to
    /// `retries` times, waiting longer each time.
    static let retries = 5

    private static func read(_ objects: any ObjectStore, _ key: String, _ range: ClosedRange<Int64>, _ etag: String) async throws -> [UInt8]
    {
        var attempt = 0
        while true {
            do {
                return try await objects.read(key: key, range: range, ifMatch: etag)
            } catch let error as TransferError where error.retryable && attempt < retries {
                attempt += 1
                try await Task.sleep(for: .milliseconds(50 << attempt))
            }
        }
    }

    /// The next block, nil after the last; a failed read throws (and the caller cancels). With
    /// no read ahead (after `shrink()`, or no room before), it waits for room for one.
    func next() async throws -> Block? {
        let first = state.withLock { s -> Pending? in
            guard !s.pending.isEmpty else { return nil }
            let first = s.pending.removeFirst()
            fill(&s)
            return first
        }
        if let first {
            let bytes = try await withTaskCancellationHandler {
                try await first.task.value
            } onCancel: {
                first.task.cancel()
            }
            return Block(bytes: bytes, held: first.held)
        }
        let offset = state.withLock { $0.nextOffset }
        guard offset < end else { return nil }
        let held = try await budget.reserve(length(at: offset), owner: owner)
        state.withLock { s in
            if s.nextOffset == offset && !s.cancelled { launch(&s, held) }
        }
        return try await next()
    }

    /// The client is not reading: the reads ahead are dropped (their blocks given back) and
    /// started again from the first of them when it asks for the next block.
    func shrink() {
        let dropped = state.withLock { s -> [Pending] in
            guard let first = s.pending.first else { return [] }
            s.nextOffset = first.start
            defer { s.pending.removeAll() }
            return s.pending
        }
        for read in dropped {
            read.task.cancel()
            read.held.release()
        }
    }

    /// Stops every read still running and gives their blocks back.
    func cancel() {
        let dropped = state.withLock { s -> [Pending] in
            s.cancelled = true
            s.nextOffset = end
            defer { s.pending.removeAll() }
            return s.pending
        }
        for read in dropped {
            read.task.cancel()
            read.held.release()
        }
    }
}

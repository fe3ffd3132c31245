import Synchronization
import TransferEngine

/// The blocks of one byte range of an object, in order, read ahead of the consumer: up to
/// `depth` ranged GETs (each pinned to `etag`) run at once, so the next blocks are arriving
/// while the current one is written to the client.
///
/// Every block is reserved from the memory budget, for the job's owner, before its read
/// starts: the window grows a block at a time while there is room, and `shrink()` (called
/// while the client is not reading) drops the reads ahead, so a stalled client holds one block,
/// not a window. A block written is handed back (`recycle`): its memory and its reservation
/// serve the next read, which then needs no new allocation and no fresh pages from the kernel,
/// unless others wait for the budget or no read is left (then the bytes go back). Whoever holds
/// it calls `cancel()` when done.
final class ReadAhead: Sendable {
    /// A block read, with the budget it holds until it has been written or handed back.
    struct Block: Sendable {
        var bytes: [UInt8]
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
        /// Blocks written, kept with their budget for the next reads to receive into; given
        /// back by `shrink()` and `cancel()`.
        var spare: [Block] = []
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

    /// A read of the next block with the budget it was given (and a spare block's memory).
    private func launch(_ s: inout State, _ held: Reservation, reusing storage: consuming [UInt8]? = nil) {
        let range = s.nextOffset...(s.nextOffset + length(at: s.nextOffset) - 1)
        // The spare memory reaches the read with no second reference to it (a second one would
        // have the first byte written copy it).
        let objects = self.objects, key = self.key, etag = self.etag, handoff = TakeOnce(consume storage)
        s.pending.append(
            Pending(start: range.lowerBound, task: Task { try await Self.read(objects, key, range, etag, handoff.take()) }, held: held))
        s.nextOffset = range.upperBound + 1
    }

    /// More reads, up to `depth`: into spare blocks first (a block's budget covers any later
    /// read, none being longer), then while the budget has room now.
    private func fill(_ s: inout State) {
        while !s.cancelled, s.pending.count < depth, s.nextOffset < end {
            if let last = s.spare.indices.last {
                // The bytes move out in place: no copy of the array stays behind.
                var bytes: [UInt8] = []
                swap(&bytes, &s.spare[last].bytes)
                launch(&s, s.spare.removeLast().held, reusing: consume bytes)
            } else if let held = budget.tryReserve(length(at: s.nextOffset), owner: owner) {
                launch(&s, held)
            } else {
                break
            }
        }
    }

    /// Tries a read that failed with a retryable error (S3's 5xx, a reset) again, up to
    /// `retries` times, waiting longer each time.
    static let retries = 5

    private static func read(
        _ objects: any ObjectStore, _ key: String, _ range: ClosedRange<Int64>, _ etag: String, _ storage: consuming [UInt8]?
    ) async throws -> [UInt8] {
        var storage = consume storage
        var attempt = 0
        while true {
            do {
                // The spare memory goes to the first attempt; a retry gets new.
                if let reused = storage.take() {
                    return try await objects.read(key: key, range: range, ifMatch: etag, reusing: consume reused)
                }
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

    /// A block written to the client: its memory and budget go to the next read. The caller
    /// keeps no reference to it (`consume`), or the next read's first byte copies it. Given
    /// back instead when no read is left to start, or when others wait for the budget (freed
    /// bytes go to them first, as the budget promises).
    func recycle(_ written: consuming Block) {
        var bytes: [UInt8] = []
        swap(&bytes, &written.bytes)
        let held = written.held
        let kept = state.withLock { s in
            guard !s.cancelled, s.nextOffset < end, budget.waiting == 0 else { return false }
            var moved: [UInt8] = []
            swap(&moved, &bytes)
            s.spare.append(Block(bytes: consume moved, held: held))
            fill(&s)
            return true
        }
        if !kept { held.release() }
    }

    /// The client is not reading: the reads ahead are dropped (their blocks given back, spare
    /// ones too) and started again from the first of them when it asks for the next block.
    func shrink() {
        let (dropped, spare) = state.withLock { s -> ([Pending], [Block]) in
            defer { s.spare.removeAll() }
            guard let first = s.pending.first else { return ([], s.spare) }
            s.nextOffset = first.start
            defer { s.pending.removeAll() }
            return (s.pending, s.spare)
        }
        Self.giveBack(dropped, spare)
    }

    /// Stops every read still running and gives their blocks back.
    func cancel() {
        let (dropped, spare) = state.withLock { s -> ([Pending], [Block]) in
            s.cancelled = true
            s.nextOffset = end
            defer {
                s.pending.removeAll()
                s.spare.removeAll()
            }
            return (s.pending, s.spare)
        }
        Self.giveBack(dropped, spare)
    }

    private static func giveBack(_ dropped: [Pending], _ spare: [Block]) {
        for read in dropped {
            read.task.cancel()
            read.held.release()
        }
        for block in spare { block.held.release() }
    }
}

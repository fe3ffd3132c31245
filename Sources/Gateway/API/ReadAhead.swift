import Synchronization
import TransferEngine

/// The blocks of one byte range of an object, in order, read ahead of the consumer: up to
/// `depth` ranged GETs (each pinned to `etag`) run at once, so the next blocks are arriving
/// while the current one is written to the client. Whoever holds it calls `cancel()` when done.
final class ReadAhead: Sendable {
    private struct State {
        var pending: [Task<[UInt8], any Error>] = []
        var nextOffset: Int64
    }
    private let state: Mutex<State>
    private let objects: any ObjectStore
    private let key: String
    private let etag: String
    private let end: Int64
    private let block: Int64
    private let depth: Int

    init(objects: any ObjectStore, key: String, etag: String, from start: Int64, length: Int64, block: Int64, depth: Int) {
        self.objects = objects
        self.key = key
        self.etag = etag
        self.end = start + length
        self.block = block
        self.depth = depth
        state = Mutex(State(nextOffset: start))
        state.withLock { s in
            while s.pending.count < depth, s.nextOffset < end { launch(&s) }
        }
    }

    private func launch(_ s: inout State) {
        let range = s.nextOffset...(min(s.nextOffset + block, end) - 1)
        s.nextOffset = range.upperBound + 1
        let objects = self.objects, key = self.key, etag = self.etag
        s.pending.append(Task { try await Self.read(objects, key, range, etag) })
    }

    /// Tries a read that failed with a retryable error (S3's 5xx, a reset) again, up to
    /// `retries` times, waiting longer each time.
    static let retries = 5

    private static func read(_ objects: any ObjectStore, _ key: String, _ range: ClosedRange<Int64>, _ etag: String) async throws -> [UInt8] {
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

    /// The next block, nil after the last; a failed read throws (and the caller cancels).
    func next() async throws -> [UInt8]? {
        guard let task = state.withLock({ s -> Task<[UInt8], any Error>? in
            guard !s.pending.isEmpty else { return nil }
            let first = s.pending.removeFirst()
            if s.nextOffset < end { launch(&s) }
            return first
        }) else { return nil }
        return try await withTaskCancellationHandler {
            try await task.value
        } onCancel: {
            task.cancel()
        }
    }

    /// Stops every read still running.
    func cancel() {
        state.withLock { s in
            for task in s.pending { task.cancel() }
            s.pending.removeAll()
            s.nextOffset = end
        }
    }
}

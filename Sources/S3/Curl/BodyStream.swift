import Synchronization

/// A response body handed to a reader as it arrives, with backpressure: at most `capacity`
/// bytes wait here; past that the transfer is paused (curl holds what it has) until the reader
/// has taken half of them. So a slow reader holds the remote sender back instead of filling
/// memory. More than `limit` bytes in all fails the body with `tooLarge` as soon as they arrive.
public final class BodyStream: Sendable {
    /// The body went past the caller's limit.
    public struct TooLarge: Error, Equatable, Sendable {
        public let limit: Int64
    }

    enum Offer {
        case accepted
        /// No room: pause the transfer until `onRoom` is called.
        case full
        case overLimit
    }

    fileprivate struct State {
        var chunks: [[UInt8]] = []
        var head = 0
        /// Memory the waiting chunks hold: their arrays' capacity (an array handed back may be
        /// larger than the bytes written into it).
        var buffered = 0
        var total: Int64 = 0
        var started = false
        /// The status of the answer whose body this is (2xx: other bodies never come here).
        var status = 0
        var finished = false
        var failure: (any Error)?
        var paused = false
        var reader: CheckedContinuation<ArraySlice<UInt8>?, any Error>?
        var startWaiter: CheckedContinuation<Void, Never>?
        var onRoom: (@Sendable () -> Void)?
        var cancel: (@Sendable () -> Void)?
        /// Arrays readers handed back, emptied, for the next chunks (at most `keptArrays`).
        var spares: [[UInt8]] = []
    }

    /// Arrays kept for reuse at most (libcurl writes up to 256 KiB at a time).
    static let keptArrays = 4

    let capacity: Int
    let limit: Int64
    private let state = Mutex(State())

    public init(capacity: Int = 1 << 20, limit: Int64) {
        self.capacity = max(64 * 1024, capacity)
        self.limit = limit
    }

    deinit {
        // The transfer holds the stream while it runs, so this comes only after its end.
        state.withLock { $0.cancel }?()
    }

    /// Stops the transfer (a reader that will not read on): a paused transfer would otherwise
    /// hold its connection open for as long as the stream lives.
    public func cancel() {
        let cancel = state.withLock { s -> (@Sendable () -> Void)? in
            if s.failure == nil && !s.finished { s.failure = CancellationError() }
            return s.cancel
        }
        cancel?()
    }

    // MARK: reader side

    /// The next piece of the body, nil at its end; throws what ended the transfer early.
    public func next() async throws -> ArraySlice<UInt8>? {
        if let ready = try take() { return ready.chunk }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                let now: Result<ArraySlice<UInt8>?, any Error>? = state.withLock { s in
                    if let chunk = s.pop() { return .success(chunk) }
                    if let failure = s.failure { return .failure(failure) }
                    if s.finished { return .success(nil) }
                    if Task.isCancelled { return .failure(CancellationError()) }
                    s.reader = continuation
                    return nil
                }
                if let now { continuation.resume(with: now) }
            }
        } onCancel: {
            let (reader, cancel) = state.withLock { s in
                defer { s.reader = nil }
                return (s.reader, s.cancel)
            }
            reader?.resume(throwing: CancellationError())
            cancel?()
        }
    }

    /// A chunk (or the end, or the failure) ready now, without waiting; wakes a paused transfer
    /// once half the room is free.
    private func take() throws -> (chunk: ArraySlice<UInt8>?, Void)? {
        let (result, wake): (Result<ArraySlice<UInt8>?, any Error>?, (@Sendable () -> Void)?) = state.withLock { s in
            guard let chunk = s.pop() else {
                if let failure = s.failure { return (.failure(failure), nil) }
                if s.finished { return (.success(nil), nil) }
                return (nil, nil)
            }
            if s.paused && s.buffered <= capacity / 2 {
                s.paused = false
                return (.success(chunk), s.onRoom)
            }
            return (.success(chunk), nil)
        }
        wake?()
        guard let result else { return nil }
        return (try result.get(), ())
    }

    /// Returns once the first byte arrived or the transfer ended (whichever comes first).
    func started() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let now = state.withLock { s -> Bool in
                if s.started || s.finished || s.failure != nil { return true }
                s.startWaiter = continuation
                return false
            }
            if now { continuation.resume() }
        }
    }

    // MARK: transfer side (the curl engine's thread)

    /// How to ask the transfer to go on after a pause, and how to stop it.
    func attach(onRoom: @escaping @Sendable () -> Void, cancel: @escaping @Sendable () -> Void) {
        state.withLock { s in
            s.onRoom = onRoom
            s.cancel = cancel
        }
    }

    func offer(_ bytes: UnsafeRawBufferPointer, status: Int) -> Offer {
        let (outcome, reader, starter, handed):
            (Offer, CheckedContinuation<ArraySlice<UInt8>?, any Error>?, CheckedContinuation<Void, Never>?, [UInt8]?) =
                state.withLock { s in
                    if s.total + Int64(bytes.count) > limit {
                        s.failure = s.failure ?? TooLarge(limit: limit)
                        defer { s.reader = nil; s.startWaiter = nil }
                        return (.overLimit, s.reader, s.startWaiter, nil)
                    }
                    if s.reader == nil && s.buffered + s.cost(of: bytes.count) > capacity {
                        s.paused = true
                        return (.full, nil, nil, nil)
                    }
                    s.total += Int64(bytes.count)
                    s.status = status
                    let starter = s.started ? nil : s.startWaiter
                    s.started = true
                    s.startWaiter = nil
                    let chunk = s.filled(with: bytes)
                    if let reader = s.reader {
                        s.reader = nil
                        return (.accepted, reader, starter, chunk)
                    }
                    s.buffered += chunk.capacity
                    s.chunks.append(chunk)
                    return (.accepted, nil, starter, nil)
                }
        starter?.resume()
        if let reader {
            if case .overLimit = outcome {
                reader.resume(throwing: TooLarge(limit: limit))
            } else {
                reader.resume(returning: (handed ?? [])[...])
            }
        }
        return outcome
    }

    /// Takes back a chunk `next` gave, its reader done with it: its array carries a later chunk
    /// (its pages already there, where a new array's fault in). Kept only while what waits and
    /// what is kept stay within `capacity`, and at most `keptArrays` of them.
    public func giveBack(_ chunk: consuming ArraySlice<UInt8>) {
        // Every chunk handed out is a whole array, and the slice of a whole array converts back
        // to it without a copy. Still shared (its reader kept a reference), it is copied on the
        // next write instead of reused: never written under a reader.
        guard chunk.startIndex == 0, chunk.count >= 16 * 1024 else { return }
        var array = Array(chunk)
        array.removeAll(keepingCapacity: true)
        state.withLock { s in
            let kept = s.spares.reduce(0) { $0 + $1.capacity }
            if s.spares.count < Self.keptArrays && !s.finished && s.buffered + kept + array.capacity <= capacity {
                s.spares.append(array)
            }
        }
    }

    /// The transfer ended, with `error` when it failed. A failure already recorded (the limit)
    /// is kept.
    func finish(_ error: (any Error)?) {
        let (reader, starter, result):
            (
                CheckedContinuation<ArraySlice<UInt8>?, any Error>?, CheckedContinuation<Void, Never>?,
                Result<ArraySlice<UInt8>?, any Error>
            ) = state.withLock { s in
                s.finished = true
                s.spares = []  // no chunk comes after
                if let error, s.failure == nil { s.failure = error }
                s.onRoom = nil
                s.cancel = nil
                defer { s.reader = nil; s.startWaiter = nil }
                let result: Result<ArraySlice<UInt8>?, any Error> = s.failure.map { .failure($0) } ?? .success(nil)
                // A reader waits only when nothing is buffered: it gets the end (or the failure) now.
                return (s.reader, s.startWaiter, result)
            }
        starter?.resume()
        reader?.resume(with: result)
    }

    /// The answer's status once its first byte arrived, else 0.
    var startedStatus: Int { state.withLock { $0.started ? $0.status : 0 } }

    /// Arrays kept for later chunks now.
    var keptArrayCount: Int { state.withLock { $0.spares.count } }

    /// Bytes received so far.
    public var received: Int64 { state.withLock { $0.total } }
}

extension BodyStream.State {
    /// The memory `count` bytes will hold once waiting: the array they go into.
    func cost(of count: Int) -> Int {
        max(count, spares.last?.capacity ?? 0)
    }

    /// `bytes` in an array handed back, else a new one.
    mutating func filled(with bytes: UnsafeRawBufferPointer) -> [UInt8] {
        var chunk = spares.popLast() ?? []
        chunk.append(contentsOf: bytes)
        return chunk
    }

    /// The oldest waiting chunk, if any.
    mutating func pop() -> ArraySlice<UInt8>? {
        guard head < chunks.count else { return nil }
        let chunk = chunks[head]
        chunks[head] = []
        head += 1
        buffered -= chunk.capacity
        if head == chunks.count {
            chunks.removeAll(keepingCapacity: true)
            head = 0
        }
        return chunk[...]
    }
}

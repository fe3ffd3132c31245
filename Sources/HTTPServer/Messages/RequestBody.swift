import Synchronization

/// Why reading a request body stopped early.
public enum RequestBodyError: Error, Equatable, Sendable {
    /// The body is longer than the caller's limit.
    case tooLarge(limit: Int)
    /// The client went away before sending the whole body.
    case connectionClosed
    /// The client sent nothing for longer than the body timeout.
    case timedOut
    /// The chunked framing is broken.
    case malformed(HTTPParseError)
}

/// A request body, streamed from the socket as the handler reads it.
///
/// Backpressure: the connection stops reading the socket once `highWater` bytes wait here
/// unread, until the handler has taken half of them, so a slow handler holds the client back
/// instead of filling memory. With `Expect: 100-continue`, nothing is read (and no `100` is
/// sent) until the handler first asks.
public final class RequestBody: Sendable {
    /// Connection-side notifications: the handler wants bytes (first demand, or the buffer
    /// drained to half the high-water mark after reaching it).
    typealias DemandHandler = @Sendable () -> Void

    private struct State {
        /// The chunks waiting, each with the memory it holds (its buffer may be larger than it).
        var chunks: [(bytes: ArraySlice<UInt8>, held: Int)] = []
        var chunkHead = 0
        var buffered = 0
        var finished = false
        var failure: RequestBodyError?
        var waiter: CheckedContinuation<ArraySlice<UInt8>?, any Error>?
        var demanded = false
        var producerStalled = false
        var received = 0
        /// The whole body, when it arrived with the head; handed out once.
        var whole: [UInt8]?

        /// The oldest waiting chunk; its slot is emptied so the array does not keep it alive.
        mutating func takeChunk() -> ArraySlice<UInt8>? {
            guard chunkHead < chunks.count else { return nil }
            let (chunk, held) = chunks[chunkHead]
            chunks[chunkHead] = ([], 0)
            chunkHead += 1
            if chunkHead == chunks.count {
                chunks.removeAll(keepingCapacity: true)
                chunkHead = 0
            } else if chunkHead >= 64 && chunkHead * 2 >= chunks.count {
                chunks.removeFirst(chunkHead)
                chunkHead = 0
            }
            buffered -= held + RequestBody.chunkOverhead
            return chunk
        }
    }

    /// Bookkeeping counted per buffered chunk, so many tiny chunks cannot hide behind a small
    /// byte count.
    static let chunkOverhead = 64

    /// The declared length, when `Content-Length` framed the body.
    public let expectedLength: Int?
    let highWater: Int
    private let state: Mutex<State>
    private let onDemand: DemandHandler?

    init(expectedLength: Int?, highWater: Int, onDemand: DemandHandler?) {
        self.expectedLength = expectedLength
        self.highWater = highWater
        self.onDemand = onDemand
        self.state = Mutex(State())
    }

    /// The body of every request that has none; reading it takes no lock.
    static let shared = RequestBody.empty()

    /// A body with no bytes.
    public static func empty() -> RequestBody {
        let body = RequestBody(expectedLength: 0, highWater: 0, onDemand: nil)
        body.finish()
        return body
    }

    /// A body that arrived whole with its head: no demand to signal, nothing more to come.
    static func whole(_ bytes: [UInt8]) -> RequestBody {
        let body = RequestBody(expectedLength: bytes.count, highWater: Int.max, onDemand: nil)
        body.state.withLock { s in
            s.whole = bytes
            s.received = bytes.count
            s.demanded = true
            s.finished = true
        }
        return body
    }

    /// A body made of the given bytes (tests, internal calls).
    public static func bytes(_ bytes: [UInt8]) -> RequestBody { whole(bytes) }

    /// The whole body, without a wait, when all of it is here (it came with its head, or there
    /// is none); nil when some is still to come. Takes it: a later `read` finds the end.
    public func takeWhole() -> [UInt8]? {
        if expectedLength == 0 { return [] }
        return state.withLock { s in
            guard let whole = s.whole else { return nil }
            s.whole = nil
            return whole
        }
    }

    /// Whether `takeWhole` would give the body.
    public var isWhole: Bool {
        expectedLength == 0 || state.withLock { $0.whole != nil }
    }

    /// The next piece of the body, or nil at its end.
    public func read() async throws -> ArraySlice<UInt8>? {
        if expectedLength == 0 { return nil }
        enum Immediate { case chunk(ArraySlice<UInt8>?, notify: Bool), failure(RequestBodyError), wait(notify: Bool) }
        let immediate: Immediate = state.withLock { s in
            if let whole = s.whole {
                s.whole = nil
                return .chunk(whole[...], notify: false)
            }
            let firstDemand = !s.demanded
            s.demanded = true
            if let chunk = s.takeChunk() {
                let notify = s.producerStalled && s.buffered <= highWater / 2
                if notify { s.producerStalled = false }
                // A body that has all arrived needs nothing more from the connection.
                return .chunk(chunk, notify: notify || (firstDemand && !s.finished))
            }
            if let failure = s.failure { return .failure(failure) }
            if s.finished { return .chunk(nil, notify: false) }
            s.producerStalled = false
            return .wait(notify: true)
        }
        switch immediate {
        case .chunk(let chunk, let notify):
            if notify { onDemand?() }
            return chunk
        case .failure(let error):
            throw error
        case .wait(let notify):
            return try await withTaskCancellationHandler {
                try await withCheckedThrowingContinuation { continuation in
                    let resumeNow: Result<ArraySlice<UInt8>?, any Error>? = state.withLock { s in
                        if let chunk = s.takeChunk() { return .success(chunk) }
                        if let failure = s.failure { return .failure(failure) }
                        if s.finished { return .success(nil) }
                        if Task.isCancelled { return .failure(CancellationError()) }
                        precondition(s.waiter == nil, "a request body is read by one reader at a time")
                        s.waiter = continuation
                        return nil
                    }
                    if let resumeNow { continuation.resume(with: resumeNow) }
                    if notify { onDemand?() }
                }
            } onCancel: {
                let waiter = state.withLock { s in
                    defer { s.waiter = nil }
                    return s.waiter
                }
                waiter?.resume(throwing: CancellationError())
            }
        }
    }

    /// Reads the whole body into memory, refusing more than `limit` bytes.
    public func collect(upTo limit: Int) async throws -> [UInt8] {
        if let expectedLength, expectedLength > limit { throw RequestBodyError.tooLarge(limit: limit) }
        // A body that came with its head is handed over as it is, without a copy.
        if let whole = state.withLock({ s -> [UInt8]? in
            defer { s.whole = nil }; return s.whole
        }) {
            return whole
        }
        var out: [UInt8] = []
        if let expectedLength, let chunk = try await read() {
            // The common small body arrives whole before the handler runs: one read, one
            // copy. (Content-Length framing never delivers more than the declared length.)
            if chunk.count == expectedLength { return Array(chunk) }
            out.reserveCapacity(expectedLength)
            out.append(contentsOf: chunk)
        }
        while let chunk = try await read() {
            guard out.count + chunk.count <= limit else { throw RequestBodyError.tooLarge(limit: limit) }
            out.append(contentsOf: chunk)
        }
        return out
    }

    /// Bytes received from the client so far.
    public var bytesReceived: Int { state.withLock { $0.received } }

    // MARK: connection side

    /// Whether the connection should read more of this body from the socket now.
    var wantsData: Bool { room > 0 }

    /// Bytes the connection may read for this body now: what is left of `highWater` after the
    /// bytes waiting here, 0 when it should not read. Once the bytes reach `highWater`, reading
    /// waits until the handler has taken them down to half of it (and is told so), so the reads
    /// that follow are large ones, not a chunk's worth each time the handler takes one.
    var room: Int {
        state.withLock { s in
            if s.finished || s.failure != nil { return 0 }
            if s.buffered >= highWater { s.producerStalled = true }
            return s.producerStalled ? 0 : highWater - s.buffered
        }
    }

    var hasDemand: Bool { state.withLock { $0.demanded } }

    /// Hands a piece of body to the reader. Returns whether more is welcome now.
    @discardableResult
    /// `held`: the memory the chunk keeps, when its buffer is larger than its bytes (counted
    /// against the high water instead of them).
    func deliver(_ chunk: ArraySlice<UInt8>, held: Int? = nil) -> Bool {
        let (waiter, more): (CheckedContinuation<ArraySlice<UInt8>?, any Error>?, Bool) = state.withLock { s in
            s.received += chunk.count
            if let waiter = s.waiter {
                s.waiter = nil
                return (waiter, true)
            }
            let held = max(held ?? chunk.count, chunk.count)
            s.chunks.append((chunk, held))
            s.buffered += held + RequestBody.chunkOverhead
            let more = s.buffered < highWater
            if !more { s.producerStalled = true }
            return (nil, more)
        }
        waiter?.resume(returning: chunk)
        return more
    }

    func finish() {
        let waiter = state.withLock { s in
            s.finished = true
            defer { s.waiter = nil }
            return s.waiter
        }
        waiter?.resume(returning: nil)
    }

    func fail(_ error: RequestBodyError) {
        let waiter = state.withLock { s -> CheckedContinuation<ArraySlice<UInt8>?, any Error>? in
            if s.finished { return nil }
            s.failure = error
            defer { s.waiter = nil }
            return s.waiter
        }
        waiter?.resume(throwing: error)
    }
}

import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// Writing: answers into the outbound buffer and the socket, streamed bodies with backpressure.
extension HTTPConnection {
    func enqueue(_ bytes: ArraySlice<UInt8>) {
        guard !closed, !bytes.isEmpty else { return }
        if outboundOffset >= outbound.count {
            outbound.removeAll(keepingCapacity: true)
            outboundOffset = 0
            switch bytes.withUnsafeBytes({ SystemCall.write(fd, $0) }) {
            case .bytes(let n):
                if n == bytes.count { return }
                outbound.append(contentsOf: bytes.dropFirst(n))
            case .wouldBlock:
                outbound.append(contentsOf: bytes)
            case .endOfFile, .failed:
                return close()
            }
            state.wrote(now: Clock.now())
            awaitWritable()
        } else {
            outbound.append(contentsOf: bytes)
        }
    }

    private func awaitWritable() {
        if !writeInterest {
            writeInterest = true
            loop.modify(fd, events: Self.readWriteEvents)
        }
        updateInterest()
    }

    func onWritable() {
        guard !closed else { return }
        while outboundOffset < outbound.count {
            let start = outboundOffset
            let result = outbound.withUnsafeBytes { raw in
                SystemCall.write(fd, UnsafeRawBufferPointer(rebasing: raw[start...]))
            }
            switch result {
            case .bytes(let n):
                outboundOffset += n
                state.wrote(now: Clock.now())
            case .wouldBlock:
                resumeDrainWaiters(all: false)
                return updateInterest()
            case .endOfFile, .failed:
                return close()
            }
        }
        outbound.removeAll(keepingCapacity: outbound.capacity <= 256 * 1024)
        outboundOffset = 0
        if writeInterest {
            writeInterest = false
            loop.modify(fd, events: Self.readEvents)
        }
        resumeDrainWaiters(all: true)
        if state.closesWhenFlushed {
            perform(state.flushed())
        } else if exchange == nil && !inbound.isEmpty {
            process()  // pipelined requests held back while the answers drained
        } else {
            updateInterest()
        }
    }

    private func resumeDrainWaiters(all: Bool) {
        guard all || pendingOutbound < context.configuration.responseHighWater, !drainWaiters.isEmpty else { return }
        let waiters = drainWaiters
        drainWaiters = []
        for waiter in waiters { waiter.resume() }
    }

    // MARK: responses

    /// Runs `work` on the loop's thread: directly when the task already runs there (the usual
    /// case, since handler tasks prefer the loop as executor), else by handing it over.
    private func onLoop(_ work: @escaping @Sendable () -> Void) async {
        if loop.inLoop { return work() }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            loop.execute {
                work()
                continuation.resume()
            }
        }
    }

    func send(_ response: HTTPResponse, for exchange: Exchange) async {
        let isHead = exchange.head.method == "HEAD"
        switch response.body {
        case .empty, .bytes:
            // A short critical section on the connection's queue, run on this thread when the
            // queue is idle: cheaper than a hop and a wake-up for the common small answer.
            await onLoop {
                if let out = self.encodeWhole(response, for: exchange) { self.enqueue(out[...]) }
                self.responseFinished(exchange)
            }
        case .stream(let length, let produce):
            let framing: ResponseHead.Framing
            if HTTPStatus.forbidsBody(response.status) {
                framing = .none
            } else if let length {
                framing = .length(length)
            } else {
                framing = exchange.head.version == .http10 ? .untilClose : .chunked
            }
            await onLoop {
                let head = self.startResponse(response, for: exchange, framing: framing)
                self.enqueue(head[...])
            }
            var completed = true
            if !isHead && framing != .none {
                let counter = Mutex(0)
                let chunked = framing == .chunked
                let declared: Int? = { if case .length(let n) = framing { return n } else { return nil } }()
                let writer = ResponseBodyWriter { bytes in
                    let total = counter.withLock { count -> Int in
                        count += bytes.count
                        return count
                    }
                    // Never send more than Content-Length promised: the surplus would be read as
                    // the start of the next response.
                    if let declared, total > declared { throw ResponseWriteError() }
                    try await self.writeBody(bytes, chunked: chunked)
                }
                do {
                    try await produce(writer)
                    if case .length(let n) = framing, counter.withLock({ $0 }) != n { completed = false }
                } catch {
                    completed = false
                }
            }
            let bodyComplete = completed
            await onLoop {
                if !bodyComplete {
                    // The body cannot be finished honestly: closing tells the client it is short.
                    exchange.state.closeAfter = true
                } else if framing == .chunked && !isHead {
                    self.enqueue(Self.lastChunk[...])
                }
                if framing == .untilClose { exchange.state.closeAfter = true }
                self.responseFinished(exchange)
            }
        }
    }

    private static let lastChunk: [UInt8] = Array("0\r\n\r\n".utf8)
    private static let crlf: [UInt8] = [0x0D, 0x0A]

    private func writeBody(_ bytes: ArraySlice<UInt8>, chunked: Bool) async throws {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            loop.execute {
                guard !self.closed else { return continuation.resume(throwing: ResponseWriteError()) }
                if chunked {
                    self.enqueue(Array((String(bytes.count, radix: 16) + "\r\n").utf8)[...])
                    self.enqueue(bytes)
                    self.enqueue(Self.crlf[...])
                } else {
                    self.enqueue(bytes)
                }
                if self.closed {
                    continuation.resume(throwing: ResponseWriteError())
                } else if self.pendingOutbound < self.context.configuration.responseHighWater {
                    continuation.resume()
                } else {
                    self.drainWaiters.append(continuation)
                }
            }
        }
    }

    /// Encodes the response head, the connection's fate for this exchange decided by the state
    /// machine.
    private func startResponse(
        _ response: HTTPResponse, for exchange: Exchange,
        framing: ResponseHead.Framing, bodyCapacity: Int = 0
    ) -> [UInt8] {
        exchange.state.responseStarted = true
        let close = state.closesAfter(
            exchange.state,
            answerSaysClose: response.headers.listElements("connection").contains { $0.equalsIgnoringASCIICase("close") },
            untilClose: framing == .untilClose)
        exchange.state.closeAfter = close
        return ResponseHead.encode(
            status: response.status, headers: response.headers, version: exchange.head.version,
            framing: framing, close: close, date: date.now(), bodyCapacity: bodyCapacity)
    }

    private func responseFinished(_ exchange: Exchange) {
        if responseDone(exchange) { process() }
    }

    /// Marks the response sent; false when the connection closes after it.
    private func responseDone(_ exchange: Exchange) -> Bool {
        guard !closed else { return false }
        exchange.state.responseDone = true
        if exchange.state.closeAfter {
            if !exchange.state.bodyDone { exchange.body.fail(.connectionClosed) }
            closeAfterFlush()
            return false
        }
        if !exchange.state.bodyDone {
            // The handler is done with the body; anything still reading it must not mistake
            // the discarded rest for a short body.
            exchange.body.fail(.connectionClosed)
            exchange.state.discarding = true
        }
        return true
    }

    /// Sends an answer given at once, on the loop, in the middle of `process()` (which then
    /// goes on to the next request itself: no recursion however many requests are pipelined).
    /// False for a streamed answer, which needs a task.
    func answerAtOnce(_ response: HTTPResponse, for exchange: Exchange) -> Bool {
        guard let out = encodeWhole(response, for: exchange) else { return false }
        enqueue(out[...])
        _ = responseDone(exchange)
        return true
    }

    /// Head and body of an answer whose body is in memory, in one buffer; nil for a stream.
    private func encodeWhole(_ response: HTTPResponse, for exchange: Exchange) -> [UInt8]? {
        let bytes: [UInt8]
        switch response.body {
        case .empty: bytes = []
        case .bytes(let b): bytes = b
        case .stream: return nil
        }
        let isHead = exchange.head.method == "HEAD"
        let framing: ResponseHead.Framing = HTTPStatus.forbidsBody(response.status) ? .none : .length(bytes.count)
        var out = startResponse(response, for: exchange, framing: framing, bodyCapacity: isHead ? 0 : bytes.count)
        if !isHead && framing != .none { out.append(contentsOf: bytes) }
        return out
    }

}

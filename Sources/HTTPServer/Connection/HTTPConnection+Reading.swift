#if canImport(Glibc)
    import Glibc
#endif

/// Reading: the socket into the inbound buffer, heads through the parser, bodies to handlers.
extension HTTPConnection {
    /// Reads while the connection wants bytes and the kernel has them. Bounded per call so one
    /// busy client cannot starve the others on this loop.
    func onReadable() {
        guard !closed, !inReadLoop else { return }
        inReadLoop = true
        var rounds = 0
        reading: while !closed && socketReadable {
            if state.isLingering {
                lingerRead()
                continue
            }
            guard wantsRead() else { break }
            rounds += 1
            if rounds > 16 {
                scheduleRead()
                break
            }
            let direct = readBodyDirectly()
            switch direct?.result ?? inbound.read(from: fd) {
            case .bytes:
                // A read that left room in its buffer emptied the kernel's queue: bytes that
                // arrive later raise a new edge, so no read that would block is needed (as
                // nginx does). The peer's shutdown may have come before those bytes, with the
                // edge already taken: once it is seen, reads go on to end of file.
                if !(direct?.filledRoom ?? inbound.lastReadFilledRoom) && !peerShutSeen { socketReadable = false }
                state.bytesRead(now: Clock.now())
                process()
                if answeredAtOnce {
                    // Fair to the others: a client answered at once would otherwise be read
                    // and answered again and again before any other connection on this loop.
                    // Its next read waits for the loop's next turn, behind the sockets' events.
                    answeredAtOnce = false
                    if !readScheduled && socketReadable {
                        readScheduled = true
                        loop.executeNextTurn {
                            self.readScheduled = false
                            self.onReadable()
                        }
                    }
                    break reading
                }
            case .wouldBlock:
                socketReadable = false
            case .endOfFile:
                socketReadable = false
                endOfFile()
            case .failed:
                close()
            }
        }
        inReadLoop = false
        updateInterest()
    }

    /// A length-framed body streaming with nothing else buffered is read from the socket
    /// straight into the chunk the handler gets, instead of into the inbound buffer and copied
    /// out of it. Reads at most what the body has left (a pipelined request's bytes stay in
    /// the socket for the buffer); a short read (a slow sender) keeps only the bytes it got.
    /// Nil when the usual path applies. (A read that finds the socket empty costs an unused
    /// chunk's allocation, not touched; sending the read after a short one through the inbound
    /// buffer instead measured no gain at 128 KiB reads, bench/RESULTS.md.)
    private func readBodyDirectly() -> (result: IOResult, filledRoom: Bool)? {
        guard let exchange, inbound.isEmpty, case .length = exchange.head.framing,
            !exchange.state.bodyDone, !exchange.state.discarding, !exchange.state.awaitsContinue,
            let remaining = exchange.state.remainingLength, remaining >= Self.directReadMinimum
        else { return nil }
        // A read takes at most what the body may still hold: with what waits for the handler,
        // never more than its high water.
        let room = min(remaining, exchange.body.room)
        guard room > 0 else { return nil }
        // The buffer is not read while the body comes this way: a large one (grown for a long
        // head) goes back now, not when the body ends.
        inbound.releaseIfLarge()
        var result = IOResult.wouldBlock
        var chunk = [UInt8](unsafeUninitializedCapacity: room) { buffer, count in
            result = SystemCall.read(fd, into: UnsafeMutableRawBufferPointer(buffer))
            if case .bytes(let n) = result { count = n } else { count = 0 }
        }
        guard case .bytes(let n) = result else { return (result, false) }
        context.directBodyReads.add(1, ordering: .relaxed)
        // A short read keeps only its bytes; a longer one keeps its whole chunk, counted as
        // that against the high water.
        let held = n <= room / 2 ? n : room
        if n <= room / 2 { chunk = chunk.withUnsafeBufferPointer { Array($0) } }
        let left = remaining - n
        exchange.state.remainingLength = left
        exchange.body.deliver(chunk[...], held: held)
        if left == 0 {
            exchange.state.bodyDone = true
            exchange.body.finish()
        }
        return (result, n == room)
    }

    /// Bodies with less than this left go through the inbound buffer.
    static let directReadMinimum = 16 * 1024

    private func endOfFile() {
        peerHungUp()
        var current = exchange?.state
        let outcome = state.endOfFile(exchange: &current, pendingOutbound: pendingOutbound)
        if let current { exchange?.state = current }
        switch outcome {
        case .failBody(let closeNow):
            exchange?.body.fail(.connectionClosed)
            if closeNow { closeAfterFlush() }
        case .closeAfterFlush: closeAfterFlush()
        case .close: close()
        case .none: break
        }
    }

    /// The client shut its side (or the connection failed) while its request is in flight:
    /// nobody waits for the answer, so the handler's task is cancelled (a long poll frees its
    /// slot at once). A body still arriving fails on its own; handlers that must finish what
    /// they started (an upload's bookkeeping) shield that work from cancellation.
    func peerHungUp() {
        guard let exchange, !exchange.state.responseDone else { return }
        exchange.handlerTask?.cancel()
    }

    func scheduleRead() {
        guard !readScheduled else { return }
        readScheduled = true
        loop.execute {
            self.readScheduled = false
            self.onReadable()
        }
    }

    private func lingerRead() {
        switch inbound.read(from: fd) {
        case .bytes(let n):
            lingered += n
            inbound.consume(inbound.readableCount)
            if lingered > 1 << 20 { close() }
        case .wouldBlock:
            socketReadable = false
        case .endOfFile, .failed:
            close()
        }
    }

    /// Moves as far as the buffered bytes allow: parses heads, feeds bodies.
    func process() {
        while !closed {
            if let exchange {
                guard pumpBody(exchange) else { break }
                continue
            }
            if inbound.isEmpty || !state.mayParseNext(pendingOutbound: pendingOutbound) { break }
            let outcome = inbound.withReadableBytes { parser.parse($0) }
            switch outcome {
            case .incomplete:
                state.headIncomplete(now: Clock.now())
                updateInterest()
                return
            case .invalid(let error):
                refuse(error)
                return
            case .complete(let head, let consumed):
                inbound.consume(consumed)
                parser.reset()
                begin(head)
            }
        }
        updateInterest()
    }

    private func begin(_ head: HTTPRequestHead) {
        var client: String?
        if peerIsProxy {
            // Behind a trusted proxy the cap counts each forwarded client's requests in flight.
            let forwarded = ForwardedClient.resolve(
                peer: peerAddress, forwardedFor: head.headers.values("x-forwarded-for"),
                trusted: context.configuration.trustedProxies)
            guard context.take(forwarded) else {
                return refuse(
                    HTTPParseError(
                        status: 429, code: "client_connection_limit",
                        detail: "This client has too many requests in flight."))
            }
            client = forwarded
        }
        state.requestBegan()
        let body: RequestBody
        var bodyArrivedWithHead = false
        switch head.framing {
        case .none:
            body = RequestBody.shared
        case .length(let n)
        where n <= inbound.readableCount && n <= context.configuration.bodyHighWater
            && !head.expectContinue:
            // The usual small JSON body, already here with its head: handed over whole.
            body = RequestBody.whole(inbound.copy(0..<n))
            inbound.consume(n)
            bodyArrivedWithHead = true
        case .length(let n):
            body = RequestBody(expectedLength: n, highWater: context.configuration.bodyHighWater, onDemand: demandHandler())
        case .chunked:
            body = RequestBody(expectedLength: nil, highWater: context.configuration.bodyHighWater, onDemand: demandHandler())
        }
        let exchange = Exchange(head: head, body: body, limits: context.configuration.limits, bodyArrived: bodyArrivedWithHead)
        self.exchange = exchange
        exchange.countedClient = client
        let request = HTTPRequest(
            head: head, body: body, remoteAddress: remoteAddress, clientAddress: client, server: context,
            informational: { [weak self] status, headers in
                await self?.sendInformational(status, headers: headers, for: exchange) ?? false
            })
        let responder = context.responder
        if let response = responder.respondAtOnce(to: request) {
            if answerAtOnce(response, for: exchange) {
                answeredAtOnce = true
            } else {
                // A streamed answer given at once is sent by a task; it is not asked for again.
                exchange.handlerTask = Task(executorPreference: loop) { await self.send(response, for: exchange) }
            }
            return
        }
        exchange.handlerTask = Task(executorPreference: loop) {
            let response = await responder.respond(to: request)
            await self.send(response, for: exchange)
        }
    }

    private func demandHandler() -> RequestBody.DemandHandler {
        { [weak self] in
            guard let self else { return }
            self.loop.execute { self.onBodyDemand() }
        }
    }

    private func onBodyDemand() {
        guard !closed, let exchange, !exchange.state.bodyDone else { return }
        if exchange.state.awaitsContinue {
            // Once a final response has started, a 100 would be out of place; the client
            // sends the body anyway (RFC 9110 §10.1.1), and the body timeout still applies.
            exchange.state.sentContinue = true
            if !exchange.state.responseStarted { enqueue(ResponseHead.continueLine[...]) }
        }
        state.bodyDemanded(now: Clock.now())
        process()
    }

    /// Feeds buffered bytes to the current body. Returns true when the exchange ended and the
    /// next request may be parsed.
    private func pumpBody(_ exchange: Exchange) -> Bool {
        while !exchange.state.bodyDone && !inbound.isEmpty {
            if !exchange.state.discarding {
                if exchange.state.awaitsContinue { return false }
                guard exchange.body.wantsData else { return false }
            }
            let step: ChunkedDecoder.Step
            do {
                step = try exchange.decode(&inbound)
            } catch {
                bodyMalformed(exchange, error as? HTTPParseError ?? .badChunk("The chunked body is malformed."))
                return false
            }
            if exchange.state.discarding {
                exchange.state.discarded += step.consumed
                if exchange.state.discarded > context.configuration.discardLimit {
                    exchange.state.bodyDone = true
                    closeAfterFlush()
                    return false
                }
            } else if let data = step.data, !data.isEmpty {
                exchange.body.deliver(inbound.copy(data)[...])
            }
            inbound.consume(step.consumed)
            if step.finished {
                exchange.state.bodyDone = true
                exchange.body.finish()
            }
        }
        if exchange.state.bodyDone && exchange.state.responseDone {
            finishExchange()
            return true
        }
        return false
    }

    private func bodyMalformed(_ exchange: Exchange, _ error: HTTPParseError) {
        exchange.body.fail(.malformed(error))
        exchange.state.bodyDone = true
        exchange.state.closeAfter = true
        if exchange.state.responseDone { closeAfterFlush() }
    }

    func finishExchange() {
        if let counted = exchange?.countedClient { context.give(counted) }
        exchange = nil
        // Idle until the next request: a buffer grown for a body goes back.
        inbound.releaseIfLarge()
        perform(state.exchangeEnded(now: Clock.now(), pendingOutbound: pendingOutbound))
    }
}

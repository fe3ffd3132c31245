/// The request in flight on a connection: its head, its body as the handler reads it, the
/// framing decoder, the handler's task, and its progress (`ExchangeState`, which the
/// connection's decisions read). Confined to the connection's loop, like the connection.
final class Exchange: @unchecked Sendable {
    let head: HTTPRequestHead
    let body: RequestBody
    var state: ExchangeState
    /// The handler's task, cancelled when the client hangs up before the answer.
    var handlerTask: Task<Void, Never>?
    /// The forwarded client this request is counted for (behind a trusted proxy).
    var countedClient: String?
    private var chunked: ChunkedDecoder

    /// `bodyArrived`: the whole body came with the head and is in `body` already.
    init(head: HTTPRequestHead, body: RequestBody, limits: HTTPLimits, bodyArrived: Bool = false) {
        self.head = head
        self.body = body
        self.chunked = ChunkedDecoder(limits: limits)
        let bodyDone: Bool, remaining: Int?
        switch head.framing {
        case .none:
            (bodyDone, remaining) = (true, 0)
        case .length where bodyArrived:
            (bodyDone, remaining) = (true, 0)
        case .length(let n):
            (bodyDone, remaining) = (false, n)
        case .chunked:
            (bodyDone, remaining) = (false, nil)
        }
        state = ExchangeState(
            keepAlive: head.keepAlive, expectContinue: head.expectContinue, chunked: head.framing == .chunked,
            bodyDone: bodyDone, remainingLength: remaining)
    }

    /// One step of body framing over the buffered bytes.
    func decode(_ inbound: inout InboundBuffer) throws -> ChunkedDecoder.Step {
        switch head.framing {
        case .none:
            return ChunkedDecoder.Step(consumed: 0, data: nil, finished: true)
        case .length:
            let take = min(state.remainingLength ?? 0, inbound.readableCount)
            let left = (state.remainingLength ?? 0) - take
            state.remainingLength = left
            return ChunkedDecoder.Step(consumed: take, data: 0..<take, finished: left == 0)
        case .chunked:
            return try inbound.withReadableBytes { bytes in try chunked.decode(bytes) }
        }
    }
}

/// Informational answers a handler sends before its final answer (RFC 9110 §15.2): `103 Early
/// Hints`, `104 Upload Resumption Supported` (draft-ietf-httpbis-resumable-upload) and the like.
/// `100 Continue` is not among them: the connection sends it itself when the handler first reads
/// a body the client holds back (`Expect: 100-continue`), and a 104 does not stand in for it.
extension ConnectionState {
    /// At most this many informational answers go out per exchange: each is queued whole, so a
    /// handler in a loop cannot grow the outbound buffer without bound.
    static let informationalLimit = 64

    /// Whether an informational answer with `status` may go out now: only 1xx statuses but 100
    /// (the connection's own) and 101 (a protocol switch, which this server never makes); only to
    /// an HTTP/1.1 client (RFC 9110 §15.2: "A server MUST NOT send a 1xx response to an HTTP/1.0
    /// client"); only before the final answer has started, on a connection that is open and
    /// whose client has not hung up; at most `informationalLimit` per exchange.
    func mayInform(status: Int, version: HTTPVersion, exchange: ExchangeState) -> Bool {
        guard (102...199).contains(status), version == .http11 else { return false }
        guard phase == .open, !peerClosed else { return false }
        return !exchange.responseStarted && !exchange.responseDone && exchange.informationalSent < Self.informationalLimit
    }
}

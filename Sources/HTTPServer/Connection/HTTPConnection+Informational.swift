/// Sending informational answers for the exchange in flight (the decision is the state
/// machine's: `ConnectionState.mayInform`).
extension HTTPConnection {
    /// Queues `status` with `headers` ahead of the final answer, on the loop. False when it may
    /// not go out (see `ConnectionState.mayInform`) or the exchange is no longer the current one.
    func sendInformational(_ status: Int, headers: HTTPHeaders, for exchange: Exchange) async -> Bool {
        await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
            let work: @Sendable () -> Void = {
                guard !self.closed, self.exchange === exchange,
                    self.state.mayInform(status: status, version: exchange.head.version, exchange: exchange.state)
                else { return continuation.resume(returning: false) }
                exchange.state.informationalSent += 1
                self.enqueue(ResponseHead.informational(status: status, headers: headers)[...])
                continuation.resume(returning: !self.closed)
            }
            if loop.inLoop { work() } else { loop.execute(work) }
        }
    }
}

import CCurl
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// Many HTTP transfers in flight on one thread the engine owns, through libcurl's multi
/// interface: connections are kept and reused, no transfer holds a thread, and nothing blocks
/// Swift's cooperative pool. Tasks submit a transfer and await its outcome; cancelling the task
/// aborts the transfer at curl's next progress callback (well under a second).
final class CurlEngine: @unchecked Sendable {
    // Confinement: `multi` is driven only on the engine thread, except `curl_multi_wakeup`,
    // which libcurl documents as callable from any thread. `active` is engine-thread only.
    private let multi: UnsafeMutableRawPointer
    private let inbox = Mutex<[CurlTransfer]>([])
    /// Paused transfers whose reader has made room again.
    private let resumed = Mutex<[CurlTransfer]>([])
    private var active: [UnsafeMutableRawPointer: CurlTransfer] = [:]

    private static let globalInit: Bool = curl_global_init(Int(CURL_GLOBAL_DEFAULT)) == CURLE_OK

    init(options: CurlOptions) {
        precondition(Self.globalInit, "libcurl failed to initialise")
        guard let multi = curl_multi_init() else { preconditionFailure("libcurl could not create a multi handle") }
        self.multi = multi
        _ = tg_multi_setopt_long(multi, CURLMOPT_MAX_HOST_CONNECTIONS, options.maxHostConnections)
        _ = tg_multi_setopt_long(multi, CURLMOPT_MAXCONNECTS, options.maxHostConnections)
        var thread = pthread_t()
        let box = Unmanaged.passRetained(self).toOpaque()
        let rc = pthread_create(
            &thread, nil,
            { argument in
                guard let argument else { return nil }
                Unmanaged<CurlEngine>.fromOpaque(argument).takeRetainedValue().run()
                return nil
            }, box)
        precondition(rc == 0, "cannot start the curl engine thread")
        pthread_detach(thread)
    }

    /// Runs `transfer` and returns its response; throws `S3Error` for transport failures.
    func perform(_ transfer: CurlTransfer) async throws -> CurlTransfer.Response {
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<CurlTransfer.Response, any Error>) in
                transfer.start(continuation)
                inbox.withLock { $0.append(transfer) }
                curl_multi_wakeup(multi)
            }
        } onCancel: {
            transfer.cancelled.store(true, ordering: .relaxed)
            curl_multi_wakeup(multi)
        }
    }

    /// Lets a transfer paused by its stream sink go on (any thread).
    func resume(_ transfer: CurlTransfer) {
        resumed.withLock { $0.append(transfer) }
        curl_multi_wakeup(multi)
    }

    private func run() {
        var running: Int32 = 0
        while true {
            for transfer in resumed.withLock({ list -> [CurlTransfer] in
                defer { list.removeAll() }; return list
            })
            where active[transfer.handle] === transfer {
                _ = curl_easy_pause(transfer.handle, 0)  // CURLPAUSE_CONT
            }
            let incoming = inbox.withLock { list -> [CurlTransfer] in
                defer { list.removeAll() }
                return list
            }
            for transfer in incoming {
                if transfer.cancelled.load(ordering: .relaxed) {
                    transfer.finish(.failure(S3Error.cancelled))
                    continue
                }
                guard curl_multi_add_handle(multi, transfer.handle) == CURLM_OK else {
                    transfer.finish(
                        .failure(S3Error(kind: .transport, status: 0, code: "CurlMulti", message: "libcurl refused the transfer")))
                    continue
                }
                active[transfer.handle] = transfer
            }
            // Cancelled transfers leave now: one waiting for a connection slot, or stalled, may
            // not reach the progress callback that would abort it.
            for (handle, transfer) in active where transfer.cancelled.load(ordering: .relaxed) {
                curl_multi_remove_handle(multi, handle)
                active[handle] = nil
                transfer.finish(.failure(S3Error.cancelled))
            }
            curl_multi_perform(multi, &running)
            var easy: UnsafeMutableRawPointer?
            var result = CURLE_OK
            while tg_multi_next_done(multi, &easy, &result) != 0 {
                guard let easy, let transfer = active.removeValue(forKey: easy) else { continue }
                curl_multi_remove_handle(multi, easy)
                complete(transfer, result)
            }
            var numfds: Int32 = 0
            curl_multi_poll(multi, nil, 0, 1000, &numfds)
        }
    }

    private func complete(_ transfer: CurlTransfer, _ result: CURLcode) {
        if result == CURLE_OK {
            return transfer.finish(.success(transfer.response))
        }
        if transfer.cancelled.load(ordering: .relaxed) {
            return transfer.finish(.failure(S3Error.cancelled))
        }
        if transfer.sinkOverflowed {
            return transfer.finish(
                .failure(
                    S3Error(
                        kind: .protocolViolation, status: transfer.response.status,
                        code: "ResponseTooLarge", message: "the answer was larger than expected")))
        }
        let code: String
        switch result {
        case CURLE_OPERATION_TIMEDOUT: code = "Timeout"
        case CURLE_COULDNT_CONNECT, CURLE_COULDNT_RESOLVE_HOST: code = "ConnectFailed"
        case CURLE_SEND_ERROR, CURLE_RECV_ERROR, CURLE_GOT_NOTHING, CURLE_PARTIAL_FILE: code = "ConnectionReset"
        case CURLE_SSL_CONNECT_ERROR, CURLE_PEER_FAILED_VERIFICATION: code = "SSLError"
        default: code = "Transport\(result.rawValue)"
        }
        transfer.finish(
            .failure(
                S3Error(
                    kind: .transport, status: 0, code: code,
                    message: String(cString: curl_easy_strerror(result)))))
    }
}

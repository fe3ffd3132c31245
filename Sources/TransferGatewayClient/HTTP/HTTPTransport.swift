import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Sends requests on one `URLSession` and reports bytes as they move: upload progress from
/// `didSendBodyData`, download bytes from `didReceive data` (to a `ResponseSink` when given).
/// Cancelling the calling Swift task cancels the request in flight.
///
/// `@unchecked Sendable`: the only mutable state, `exchanges`, is behind `lock`; the session is
/// set once in `init`.
final class HTTPTransport: NSObject, URLSessionDataDelegate, @unchecked Sendable {
    /// What one request in flight has gathered so far.
    private final class Exchange {
        let continuation: CheckedContinuation<HTTPAnswer, Error>
        let sink: ResponseSink?
        let onSent: (@Sendable (Int64) -> Void)?
        let onReceived: (@Sendable (Int64) -> Void)?
        var body = Data()
        var accepted: Bool?
        var received: Int64 = 0
        var failure: Error?

        init(
            _ continuation: CheckedContinuation<HTTPAnswer, Error>, sink: ResponseSink?, onSent: (@Sendable (Int64) -> Void)?,
            onReceived: (@Sendable (Int64) -> Void)?
        ) {
            self.continuation = continuation
            self.sink = sink
            self.onSent = onSent
            self.onReceived = onReceived
        }
    }

    /// A refused body is read no further than this before the request is dropped.
    static let refusedBodyLimit = 1 << 20

    private let lock = NSLock()
    private var exchanges: [Int: Exchange] = [:]
    private var session: URLSession?

    init(configuration: URLSessionConfiguration) {
        super.init()
        let queue = OperationQueue()
        queue.maxConcurrentOperationCount = 1
        queue.name = "TransferGatewayClient.HTTPTransport"
        session = URLSession(configuration: configuration, delegate: self, delegateQueue: queue)
    }

    /// Ends the session (it holds its delegate, this object, until then).
    func close() { session?.invalidateAndCancel() }

    /// Sends `request` with `body` and waits for the whole answer.
    func send(
        _ request: URLRequest, body: Data? = nil, sink: ResponseSink? = nil, onSent: (@Sendable (Int64) -> Void)? = nil,
        onReceived: (@Sendable (Int64) -> Void)? = nil
    ) async throws -> HTTPAnswer {
        try Task.checkCancellation()
        guard let session else { throw CancellationError() }
        let task: URLSessionTask = body.map { session.uploadTask(with: request, from: $0) } ?? session.dataTask(with: request)
        do {
            return try await withTaskCancellationHandler {
                try await withCheckedThrowingContinuation { continuation in
                    lock.withLock {
                        exchanges[task.taskIdentifier] = Exchange(continuation, sink: sink, onSent: onSent, onReceived: onReceived)
                    }
                    task.resume()
                }
            } onCancel: {
                task.cancel()
            }
        } catch {
            if Task.isCancelled { throw CancellationError() }
            throw error
        }
    }

    private func exchange(_ task: URLSessionTask) -> Exchange? { lock.withLock { exchanges[task.taskIdentifier] } }

    func urlSession(
        _ session: URLSession, task: URLSessionTask, didSendBodyData bytesSent: Int64, totalBytesSent: Int64,
        totalBytesExpectedToSend: Int64
    ) {
        exchange(task)?.onSent?(totalBytesSent)
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        guard let exchange = exchange(dataTask) else { return }
        if let sink = exchange.sink {
            if exchange.accepted == nil {
                exchange.accepted = (dataTask.response as? HTTPURLResponse).map { sink.accept($0) } ?? false
            }
            if exchange.accepted == true {
                do {
                    try sink.write(data)
                    exchange.received += Int64(data.count)
                    exchange.onReceived?(exchange.received)
                } catch {
                    exchange.failure = error
                    dataTask.cancel()
                }
                return
            }
        }
        exchange.body.append(data)
        if exchange.sink != nil && exchange.body.count > Self.refusedBodyLimit { dataTask.cancel() }
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: Error?) {
        guard let exchange = lock.withLock({ exchanges.removeValue(forKey: task.taskIdentifier) }) else { return }
        if let failure = exchange.failure {
            exchange.continuation.resume(throwing: failure)
        } else if let response = task.response as? HTTPURLResponse, error == nil || exchange.accepted == false {
            // A refused body cut short still has its status and head, which is what counts.
            exchange.continuation.resume(returning: HTTPAnswer(response, body: exchange.body))
        } else {
            exchange.continuation.resume(throwing: error ?? URLError(.badServerResponse))
        }
    }
}

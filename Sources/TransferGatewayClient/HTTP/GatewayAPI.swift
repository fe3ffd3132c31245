import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The gateway's routes as the client uses them: bearer tokens (replaced once on 401), retries
/// with backoff on network errors, 429 and 5xx, and answers turned into `TransferError`s.
/// The typed calls live in `GatewayAPI+Jobs.swift` and `GatewayAPI+Uploads.swift`.
struct GatewayAPI: Sendable {
    let baseURL: URL
    let transport: HTTPTransport
    let tokens: TokenSource
    let retry: RetryPolicy
    let timeout: TimeInterval

    /// One request to the gateway (or, with `authorized` false, to S3 or a data link).
    struct Call: Sendable {
        var method: String
        var url: URL
        var body: Data?
        var headers: [String: String] = [:]
        var authorized = true
        var sink: ResponseSink?
        var onSent: (@Sendable (Int64) -> Void)?
        var onReceived: (@Sendable (Int64) -> Void)?
    }

    func url(_ path: String, query: [URLQueryItem] = []) -> URL {
        var components = URLComponents(url: baseURL.appendingPathComponent(path), resolvingAgainstBaseURL: false)!
        if !query.isEmpty { components.queryItems = query }
        return components.url!
    }

    /// A JSON call to the gateway.
    func jsonCall(_ method: String, _ path: String, body: (some Encodable)?, idempotencyKey: String? = nil) throws -> Call {
        var call = Call(method: method, url: url(path))
        if let body {
            call.body = try JSONEncoder().encode(body)
            call.headers["Content-Type"] = "application/json"
        }
        if let idempotencyKey { call.headers["Idempotency-Key"] = idempotencyKey }
        return call
    }

    /// Sends once, replacing a refused token once (401).
    func sendOnce(_ call: Call) async throws -> HTTPAnswer {
        var request = URLRequest(url: call.url, timeoutInterval: timeout)
        request.httpMethod = call.method
        for (name, value) in call.headers { request.setValue(value, forHTTPHeaderField: name) }
        guard call.authorized else {
            return try await transport.send(request, body: call.body, sink: call.sink, onSent: call.onSent, onReceived: call.onReceived)
        }
        let token = try await tokens.token()
        request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization")
        let answer = try await transport.send(request, body: call.body, sink: call.sink, onSent: call.onSent, onReceived: call.onReceived)
        guard answer.status == 401 else { return answer }
        let fresh = try await tokens.replace(refused: token)
        guard fresh != token else { return answer }
        request.setValue("Bearer \(fresh)", forHTTPHeaderField: "Authorization")
        return try await transport.send(request, body: call.body, sink: call.sink, onSent: call.onSent, onReceived: call.onReceived)
    }

    /// Sends, retrying network errors, 429 and 5xx within the retry limit.
    func send(_ call: Call) async throws -> HTTPAnswer {
        var backoff = Backoff(policy: retry)
        while true {
            do {
                let answer = try await sendOnce(call)
                guard answer.isTransient else { return answer }
                try await backoff.wait(retryAfter: answer.retryAfter, cause: Self.describe(answer))
            } catch let error where Self.isTransient(error) {
                try await backoff.wait(retryAfter: nil, cause: "network: \(error.localizedDescription)")
            }
        }
    }

    /// Sends and decodes a 2xx answer as `T`; anything else becomes a `TransferError`.
    func decode<T: Decodable>(_ type: T.Type, _ call: Call) async throws -> T {
        let answer = try await send(call)
        guard answer.isSuccess else { throw Self.failure(answer) }
        do {
            return try JSONDecoder().decode(T.self, from: answer.body)
        } catch {
            throw TransferError(.badResponse, "the gateway's answer to \(call.method) \(call.url.path) is not what was expected: \(error)")
        }
    }

    /// Whether an error thrown by the transport may pass if the request is sent again.
    static func isTransient(_ error: Error) -> Bool {
        if error is CancellationError || error is TransferError { return false }
        if let error = error as? URLError { return error.code != .cancelled }
        return (error as NSError).domain == NSURLErrorDomain && (error as NSError).code != NSURLErrorCancelled
    }

    /// A non-2xx answer as the error it means.
    static func failure(_ answer: HTTPAnswer) -> TransferError {
        let problem = answer.problem
        let message = describe(answer)
        switch answer.status {
        case 401: return TransferError(.unauthorized, message, status: 401, serverCode: problem?.code)
        case 403: return TransferError(.forbidden, message, status: 403, serverCode: problem?.code)
        case 404, 410: return TransferError(.notFound, message, status: answer.status, serverCode: problem?.code)
        case 412: return TransferError(.sourceChanged, message, status: 412, serverCode: problem?.code)
        case 429, 500...: return TransferError(.retriesExhausted, message, status: answer.status, serverCode: problem?.code)
        default: return TransferError(.rejected, message, status: answer.status, serverCode: problem?.code)
        }
    }

    /// `HTTP 409 offset_mismatch: detail` (never a URL or a header value).
    static func describe(_ answer: HTTPAnswer) -> String {
        let problem = answer.problem
        var text = "HTTP \(answer.status)"
        if let code = problem?.code { text += " \(code)" }
        if let detail = problem?.detail ?? problem?.title { text += ": \(detail)" }
        return text
    }
}

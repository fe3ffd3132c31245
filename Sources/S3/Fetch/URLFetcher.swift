import CCurl
import Dispatch

/// Plain http(s) requests to URLs a user named (URL imports), on the S3 client's curl engine,
/// behind the `AddressGuard`: each URL is parsed by libcurl's own parser (so the host checked
/// is the host connected to), its name resolved and checked, and the connection pinned to the
/// checked address. Redirects are followed here, at most five, each hop checked the same way.
public struct URLFetcher: Sendable {
    let engine: CurlEngine
    let options: CurlOptions
    public let addressGuard: AddressGuard

    public struct Response: Sendable {
        public let status: Int
        public let headers: [(String, String)]
        public let body: [UInt8]
        /// The CRC-32C of the body a `summing` file sink received; nil for other sinks.
        public var crc32c: UInt32? = nil

        public func header(_ name: String) -> String? {
            headers.last { $0.0.lowercased() == name }?.1
        }
    }

    public enum FetchError: Error, Equatable, Sendable {
        case badURL(String)
        case refused(AddressGuard.Refusal)
        case tooManyRedirects
    }

    /// `method` on `url`; 3xx answers with a `Location` are followed (GET and HEAD only).
    public func send(
        _ method: String, url: String, headers: [(String, String)] = [],
        sink: ResponseBodySink = .memory(limit: 1 << 20)
    ) async throws -> Response {
        var current = url
        for _ in 0...5 {
            let target = try Self.parse(current)
            let address = try await resolve(target)
            // An IPv6 literal names its one address (checked above) and needs no lookup; libcurl
            // 7.88 refuses a `[host]:port:[address]` pin anyway.
            let pin = target.host.hasPrefix("[") ? nil : "\(target.host):\(target.port):\(address)"
            guard
                let transfer = CurlTransfer(
                    method: method, url: target.url, headers: headers, source: .none, sink: sink,
                    options: options, pinnedAddress: pin)
            else {
                throw FetchError.badURL("a header cannot be sent")
            }
            let response = try await engine.perform(transfer)
            if (300...399).contains(response.status), response.status != 304, let location = response.header("location") {
                current = try Self.resolveReference(location, against: target.url)
                continue
            }
            return Response(status: response.status, headers: response.headers, body: response.body, crc32c: response.crc32c)
        }
        throw FetchError.tooManyRedirects
    }

    /// POSTs `body` to `url` once and answers the status, taking at most `timeoutSeconds` in all
    /// (the answer's body is read and dropped). No redirect is followed: the URL is an operator's
    /// setting (the webhook receiver), and one that moved is theirs to change.
    public func post(_ url: String, body: [UInt8], headers: [(String, String)], timeoutSeconds: Int) async throws -> Int {
        let target = try Self.parse(url)
        let address = try await resolve(target)
        let pin = target.host.hasPrefix("[") ? nil : "\(target.host):\(target.port):\(address)"
        var bounded = options
        bounded.totalTimeoutMilliseconds = timeoutSeconds * 1000
        guard
            let transfer = CurlTransfer(
                method: "POST", url: target.url, headers: headers, source: .bytes(body),
                sink: .discard, options: bounded, pinnedAddress: pin)
        else {
            throw FetchError.badURL("a header cannot be sent")
        }
        return try await engine.perform(transfer).status
    }

    /// An answer whose body is read as it arrives (`stream`).
    public struct StreamedResponse: Sendable {
        public let status: Int
        /// The body as it arrives for a 2xx answer; already ended for any other.
        public let body: BodyStream
    }

    /// GET `url`, following redirects as `send` does, and hands the final answer's body over as
    /// it arrives: at most `capacity` bytes wait for the reader, and a body past `limit` bytes
    /// fails with `BodyStream.TooLarge` as soon as it goes past.
    public func stream(
        _ url: String, headers: [(String, String)] = [], limit: Int64,
        capacity: Int = 1 << 20
    ) async throws -> StreamedResponse {
        var current = url
        for _ in 0...5 {
            let target = try Self.parse(current)
            let address = try await resolve(target)
            let pin = target.host.hasPrefix("[") ? nil : "\(target.host):\(target.port):\(address)"
            let body = BodyStream(capacity: capacity, limit: limit)
            guard
                let transfer = CurlTransfer(
                    method: "GET", url: target.url, headers: headers, source: .none, sink: .stream(body),
                    options: options, pinnedAddress: pin)
            else {
                throw FetchError.badURL("a header cannot be sent")
            }
            let engine = self.engine
            let task = Task<CurlTransfer.Response, any Error> {
                do {
                    let response = try await engine.perform(transfer)
                    body.finish(nil)
                    return response
                } catch {
                    body.finish(error)
                    throw error
                }
            }
            body.attach(onRoom: { engine.resume(transfer) }, cancel: { task.cancel() })
            await withTaskCancellationHandler {
                await body.started()
            } onCancel: {
                task.cancel()
            }
            let status = body.startedStatus
            if status != 0 { return StreamedResponse(status: status, body: body) }
            let response = try await task.value
            if (300...399).contains(response.status), response.status != 304, let location = response.header("location") {
                current = try Self.resolveReference(location, against: target.url)
                continue
            }
            return StreamedResponse(status: response.status, body: body)
        }
        throw FetchError.tooManyRedirects
    }

    struct Target {
        let url: String
        let host: String
        let port: Int
    }

    /// Scheme http or https, no user info, a host; the URL as libcurl normalises it.
    /// Whether libcurl's parser takes `text` as an http(s) URL this fetcher can use.
    public static func isUsable(_ text: String) -> Bool {
        (try? parse(text)) != nil
    }

    static func parse(_ text: String) throws -> Target {
        guard let handle = curl_url() else { throw FetchError.badURL(text) }
        defer { curl_url_cleanup(handle) }
        guard curl_url_set(handle, CURLUPART_URL, text, 0) == CURLUE_OK else { throw FetchError.badURL(text) }
        func part(_ what: CURLUPart, _ flags: UInt32 = 0) -> String? {
            var value: UnsafeMutablePointer<CChar>?
            guard curl_url_get(handle, what, &value, flags) == CURLUE_OK, let value else { return nil }
            defer { curl_free(value) }
            return String(cString: value)
        }
        guard let scheme = part(CURLUPART_SCHEME)?.lowercased(), scheme == "http" || scheme == "https" else {
            throw FetchError.badURL("only http and https URLs can be imported")
        }
        guard part(CURLUPART_USER) == nil, part(CURLUPART_PASSWORD) == nil else {
            throw FetchError.badURL("URLs with user info are not accepted")
        }
        guard let host = part(CURLUPART_HOST), !host.isEmpty,
            let portText = part(CURLUPART_PORT, UInt32(CURLU_DEFAULT_PORT)), let port = Int(portText),
            let url = part(CURLUPART_URL)
        else {
            throw FetchError.badURL(text)
        }
        return Target(url: url, host: host, port: port)
    }

    /// A `Location` value made absolute against the URL that answered it.
    static func resolveReference(_ location: String, against base: String) throws -> String {
        guard let handle = curl_url() else { throw FetchError.badURL(location) }
        defer { curl_url_cleanup(handle) }
        guard curl_url_set(handle, CURLUPART_URL, base, 0) == CURLUE_OK,
            curl_url_set(handle, CURLUPART_URL, location, 0) == CURLUE_OK
        else { throw FetchError.badURL(location) }
        var value: UnsafeMutablePointer<CChar>?
        guard curl_url_get(handle, CURLUPART_URL, &value, 0) == CURLUE_OK, let value else { throw FetchError.badURL(location) }
        defer { curl_free(value) }
        return String(cString: value)
    }

    /// DNS is blocking: it runs on a Dispatch thread, not on Swift's cooperative pool.
    private func resolve(_ target: Target) async throws -> String {
        let guardian = addressGuard
        let result: Result<String, AddressGuard.Refusal> = await withCheckedContinuation { continuation in
            DispatchQueue.global().async {
                continuation.resume(
                    returning: Result { () throws(AddressGuard.Refusal) -> String in
                        try guardian.resolve(host: target.host, port: target.port)
                    })
            }
        }
        switch result {
        case .success(let address): return address
        case .failure(let refusal): throw FetchError.refused(refusal)
        }
    }
}

extension S3Client {
    /// A fetcher for user-named URLs sharing this client's connections thread.
    public func urlFetcher(allowedHosts: [String], reach: AddressGuard.Reach = .publicOnly) -> URLFetcher {
        URLFetcher(engine: engine, options: options, addressGuard: AddressGuard(allowedHosts: allowedHosts, reach: reach))
    }
}

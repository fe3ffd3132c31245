import CCurl
import Crypto
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// Where a request body comes from.
public enum RequestBodySource: Sendable {
    case none
    case bytes([UInt8])
    /// `length` bytes of an open file from `offset` (read with `pread`; the caller keeps `fd` open).
    case file(fd: Int32, offset: Int64, length: Int64)

    var length: Int64 {
        switch self {
        case .none: return 0
        case .bytes(let b): return Int64(b.count)
        case .file(_, _, let length): return length
        }
    }
}

/// Where a response body goes.
public enum ResponseBodySink: Sendable {
    /// Kept in memory, at most `limit` bytes (more fails the transfer).
    case memory(limit: Int)
    /// As `memory`, in the bytes `storage` holds (emptied, their room kept): a caller reading
    /// block after block uses one allocation again, memory already touched, so the kernel has
    /// no pages to fault in and zero for each block.
    case memoryReusing(limit: Int, storage: ReusableBytes)
    /// Written with `pwrite` into an open file from `offset`; with `summing`, the bytes'
    /// CRC-32C is summed as they are written (the response's `crc32c`), so nothing reads the
    /// file back for it.
    case file(fd: Int32, offset: Int64, summing: Bool = false)
    /// Handed to a reader as it arrives, the transfer paused while the reader is behind.
    case stream(BodyStream)
    /// Read and dropped (an answer only its status matters of, however long its body).
    case discard
}

/// Bytes handed to a transfer to receive its body into (`ResponseBodySink.memoryReusing`).
/// The transfer takes them when the body starts; whoever hands them in keeps no other reference,
/// or the first byte written copies them.
public final class ReusableBytes: Sendable {
    private let bytes: Mutex<[UInt8]?>

    public init(_ bytes: consuming [UInt8]) { self.bytes = Mutex(consume bytes) }

    /// The bytes, emptied with their room kept; nil the second time.
    func take() -> [UInt8]? {
        bytes.withLock { held in
            guard var taken = held.take() else { return nil }
            taken.removeAll(keepingCapacity: true)
            return taken
        }
    }
}

/// One HTTP exchange on the curl engine: the easy handle, its callbacks' state and the
/// continuation that receives the outcome. Mutable state is touched only by libcurl's callbacks,
/// which run on the engine's thread; `cancelled` is atomic because any thread may set it.
final class CurlTransfer: @unchecked Sendable {
    struct Response: Sendable {
        var status: Int
        var headers: [(String, String)]
        var body: [UInt8]
        /// The CRC-32C of the body written to a `summing` file sink; nil for other sinks.
        var crc32c: UInt32?

        func header(_ name: String) -> String? {
            headers.last { $0.0.lowercased() == name }?.1
        }
    }

    let handle: UnsafeMutableRawPointer
    private var headerList: UnsafeMutablePointer<curl_slist>?
    private var resolveList: UnsafeMutablePointer<curl_slist>?
    private let source: RequestBodySource
    private var sourcePosition: Int64 = 0
    private let sink: ResponseBodySink
    private var sinkPosition: Int64 = 0
    private var sinkFailed = false
    var response: Response
    let cancelled = Atomic<Bool>(false)
    private var continuation: CheckedContinuation<Response, any Error>?

    /// `pinnedAddress` (`host:port:address`) makes curl connect to an address the caller
    /// already checked, never to what a second DNS lookup might say; such a transfer speaks
    /// only http(s), follows no redirect and ignores proxy variables.
    init?(
        method: String, url: String, headers: [(String, String)], source: RequestBodySource,
        sink: ResponseBodySink, options: CurlOptions, pinnedAddress: String? = nil
    ) {
        guard let handle = curl_easy_init() else { return nil }
        self.handle = handle
        self.source = source
        self.sink = sink
        let summing = if case .file(_, _, true) = sink { true } else { false }
        response = Response(status: 0, headers: [], body: [], crc32c: summing ? 0 : nil)
        for (name, value) in headers {
            // curl sends these verbatim: a CR or LF would add headers, an empty value would be
            // dropped after being signed. Refuse rather than send.
            guard Self.canSend(name: name, value: value) else {
                return nil  // deinit frees the handle and the list
            }
            headerList = curl_slist_append(headerList, "\(name): \(value)")
        }
        // Headers curl would choose by itself are removed ("Name:" with no value): "Expect:
        // 100-continue" on large uploads (S3 does not need the round trip), "Accept: */*", and
        // a POST's "Content-Type: application/x-www-form-urlencoded", which S3 would store as
        // the type of a multipart object created without one.
        headerList = curl_slist_append(headerList, "Expect:")
        headerList = curl_slist_append(headerList, "Accept:")
        if !headers.contains(where: { $0.0.lowercased() == "content-type" }) {
            headerList = curl_slist_append(headerList, "Content-Type:")
        }
        if case .none = source, method != "GET", method != "HEAD", method != "DELETE" {
            headerList = curl_slist_append(headerList, "Content-Length: 0")
        }
        configure(method: method, url: url, options: options)
        if let pinnedAddress {
            resolveList = curl_slist_append(nil, pinnedAddress)
            _ = tg_easy_setopt_slist(handle, CURLOPT_RESOLVE, resolveList)
            _ = tg_easy_setopt_str(handle, CURLOPT_PROTOCOLS_STR, "http,https")
            _ = tg_easy_setopt_str(handle, CURLOPT_REDIR_PROTOCOLS_STR, "http,https")
            _ = tg_easy_setopt_long(handle, CURLOPT_FOLLOWLOCATION, 0)
            _ = tg_easy_setopt_str(handle, CURLOPT_NOPROXY, "*")
        }
    }

    /// Whether a header goes out as it was signed: a token for a name, a non-empty value of
    /// visible ASCII and spaces (a CR or LF would add headers; curl drops an empty one).
    static func canSend(name: String, value: String) -> Bool {
        isToken(name) && !value.isEmpty && value.utf8.allSatisfy { $0 >= 0x20 && $0 <= 0x7E }
    }

    static func isToken(_ name: String) -> Bool {
        !name.isEmpty
            && name.utf8.allSatisfy { byte in
                (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A)
                    || "!#$%&'*+-.^_`|~".utf8.contains(byte)
            }
    }

    deinit {
        curl_easy_cleanup(handle)
        curl_slist_free_all(headerList)
        curl_slist_free_all(resolveList)
    }

    func start(_ continuation: CheckedContinuation<Response, any Error>) {
        self.continuation = continuation
    }

    /// Resumes the waiting task exactly once.
    func finish(_ result: Result<Response, any Error>) {
        guard let continuation else { return }
        self.continuation = nil
        continuation.resume(with: result)
    }

    private func configure(method: String, url: String, options: CurlOptions) {
        let me = Unmanaged.passUnretained(self).toOpaque()
        _ = tg_easy_setopt_str(handle, CURLOPT_URL, url)
        _ = tg_easy_setopt_long(handle, CURLOPT_NOSIGNAL, 1)
        _ = tg_easy_setopt_ptr(handle, CURLOPT_PRIVATE, me)
        _ = tg_easy_setopt_slist(handle, CURLOPT_HTTPHEADER, headerList)
        _ = tg_easy_setopt_long(handle, CURLOPT_CONNECTTIMEOUT_MS, options.connectTimeoutMilliseconds)
        _ = tg_easy_setopt_long(handle, CURLOPT_LOW_SPEED_LIMIT, options.lowSpeedBytesPerSecond)
        _ = tg_easy_setopt_long(handle, CURLOPT_LOW_SPEED_TIME, options.lowSpeedSeconds)
        if let total = options.totalTimeoutMilliseconds { _ = tg_easy_setopt_long(handle, CURLOPT_TIMEOUT_MS, total) }
        _ = tg_easy_setopt_long(handle, CURLOPT_TCP_NODELAY, 1)
        _ = tg_easy_setopt_long(handle, CURLOPT_BUFFERSIZE, 256 * 1024)
        _ = tg_easy_setopt_long(handle, CURLOPT_UPLOAD_BUFFERSIZE, 512 * 1024)
        switch method {
        case "GET": break
        case "HEAD": _ = tg_easy_setopt_long(handle, CURLOPT_NOBODY, 1)
        case "PUT":
            _ = tg_easy_setopt_long(handle, CURLOPT_UPLOAD, 1)
            _ = tg_easy_setopt_off(handle, CURLOPT_INFILESIZE_LARGE, Int(source.length))
        case "POST":
            _ = tg_easy_setopt_long(handle, CURLOPT_POST, 1)
            _ = tg_easy_setopt_off(handle, CURLOPT_POSTFIELDSIZE_LARGE, Int(source.length))
        default:
            _ = tg_easy_setopt_str(handle, CURLOPT_CUSTOMREQUEST, method)
        }
        if source.length > 0 || method == "PUT" || method == "POST" {
            // A reused connection found dead makes curl rewind the body and send it again.
            _ = tg_easy_setopt_ptr(handle, CURLOPT_SEEKDATA, me)
            _ = tg_easy_setopt_seek(handle) { user, offset, origin in
                guard let user, origin == SEEK_SET else { return Int32(CURL_SEEKFUNC_CANTSEEK) }
                let transfer = Unmanaged<CurlTransfer>.fromOpaque(user).takeUnretainedValue()
                guard offset >= 0, Int64(offset) <= transfer.source.length else { return Int32(CURL_SEEKFUNC_FAIL) }
                transfer.sourcePosition = Int64(offset)
                return Int32(CURL_SEEKFUNC_OK)
            }
            _ = tg_easy_setopt_ptr(handle, CURLOPT_READDATA, me)
            _ = tg_easy_setopt_datafn(handle, CURLOPT_READFUNCTION) { buffer, size, count, user in
                guard let buffer, let user else { return 0 }
                let transfer = Unmanaged<CurlTransfer>.fromOpaque(user).takeUnretainedValue()
                return transfer.readBody(into: buffer, capacity: size * count)
            }
        }
        _ = tg_easy_setopt_ptr(handle, CURLOPT_WRITEDATA, me)
        _ = tg_easy_setopt_datafn(handle, CURLOPT_WRITEFUNCTION) { data, size, count, user in
            guard let data, let user else { return 0 }
            let transfer = Unmanaged<CurlTransfer>.fromOpaque(user).takeUnretainedValue()
            return transfer.writeBody(data, count: size * count)
        }
        _ = tg_easy_setopt_ptr(handle, CURLOPT_HEADERDATA, me)
        _ = tg_easy_setopt_datafn(handle, CURLOPT_HEADERFUNCTION) { data, size, count, user in
            guard let data, let user else { return 0 }
            let transfer = Unmanaged<CurlTransfer>.fromOpaque(user).takeUnretainedValue()
            transfer.header(data, count: size * count)
            return size * count
        }
        _ = tg_easy_setopt_long(handle, CURLOPT_NOPROGRESS, 0)
        _ = tg_easy_setopt_ptr(handle, CURLOPT_XFERINFODATA, me)
        _ = tg_easy_setopt_xferinfo(handle) { user, _, _, _, _ in
            guard let user else { return 0 }
            let transfer = Unmanaged<CurlTransfer>.fromOpaque(user).takeUnretainedValue()
            return transfer.cancelled.load(ordering: .relaxed) ? 1 : 0
        }
    }

    private func readBody(into buffer: UnsafeMutablePointer<CChar>, capacity: Int) -> Int {
        let remaining = source.length - sourcePosition
        let take = Int(min(Int64(capacity), remaining))
        if take <= 0 { return 0 }
        switch source {
        case .none:
            return 0
        case .bytes(let bytes):
            bytes.withUnsafeBytes { raw in
                UnsafeMutableRawPointer(buffer).copyMemory(from: raw.baseAddress! + Int(sourcePosition), byteCount: take)
            }
            sourcePosition += Int64(take)
            return take
        case .file(let fd, let offset, _):
            while true {
                let n = pread(fd, buffer, take, off_t(offset + sourcePosition))
                if n < 0 && errno == EINTR { continue }
                if n <= 0 { return Int(CURL_READFUNC_ABORT) }
                sourcePosition += Int64(n)
                return n
            }
        }
    }

    private func writeBody(_ data: UnsafeMutablePointer<CChar>, count: Int) -> Int {
        // Error answers are small XML documents: keep them in memory whatever the sink.
        if response.status >= 300 || response.status == 0 {
            if response.body.count < 64 * 1024 {
                data.withMemoryRebound(to: UInt8.self, capacity: count) {
                    response.body.append(contentsOf: UnsafeBufferPointer(start: $0, count: count))
                }
            }
            return count
        }
        switch sink {
        case .memory(let limit), .memoryReusing(let limit, _):
            guard response.body.count + count <= limit else { sinkFailed = true; return 0 }
            if response.body.isEmpty {
                // The memory handed in is taken at the first byte, known length or not: left in
                // the sink it would stay alive beside the body.
                if case .memoryReusing(_, let storage) = sink, let reused = storage.take() { response.body = reused }
                if let length = response.header("content-length").flatMap(Int.init), length > count {
                    // The whole body's room at once: growing it by doubling copies it again and again.
                    response.body.reserveCapacity(min(length, limit))
                }
            }
            data.withMemoryRebound(to: UInt8.self, capacity: count) {
                response.body.append(contentsOf: UnsafeBufferPointer(start: $0, count: count))
            }
            return count
        case .discard:
            return count
        case .stream(let stream):
            switch stream.offer(UnsafeRawBufferPointer(start: data, count: count), status: response.status) {
            case .accepted: return count
            case .full: return Int(CURL_WRITEFUNC_PAUSE)
            case .overLimit:
                sinkFailed = true
                return 0
            }
        case .file(let fd, let offset, let summing):
            if summing, let crc = response.crc32c {
                response.crc32c = Digest.crc32c(UnsafeRawBufferPointer(start: data, count: count), continuing: crc)
            }
            var written = 0
            while written < count {
                let n = pwrite(fd, data + written, count - written, off_t(offset + sinkPosition))
                if n < 0 && errno == EINTR { continue }
                if n <= 0 { sinkFailed = true; return 0 }
                written += n
                sinkPosition += Int64(n)
            }
            return count
        }
    }

    private func header(_ data: UnsafeMutablePointer<CChar>, count: Int) {
        let line = data.withMemoryRebound(to: UInt8.self, capacity: count) {
            String(decoding: UnsafeBufferPointer(start: $0, count: count), as: UTF8.self)
        }
        if line.hasPrefix("HTTP/") {
            // A new status line (after a 100 Continue, say) starts a new header block.
            response.headers.removeAll()
            let parts = line.split(separator: " ")
            if parts.count >= 2, let status = Int(parts[1]) { response.status = status }
            return
        }
        guard let colon = line.firstIndex(of: ":") else { return }
        let name = line[..<colon].lowercased()
        var value = line[line.index(after: colon)...]
        while let f = value.first, f == " " || f == "\t" { value.removeFirst() }
        // "\r\n" is one Character in Swift: test for white space, not for "\r".
        while let l = value.last, l.isWhitespace { value.removeLast() }
        response.headers.append((name, String(value)))
    }

    /// Bytes written to the sink (downloads).
    var bytesReceived: Int64 { sinkPosition }
    var sinkOverflowed: Bool { sinkFailed }
}

/// Transport settings for every transfer.
public struct CurlOptions: Sendable {
    public var connectTimeoutMilliseconds = 10_000
    /// A transfer slower than this many bytes per second for `lowSpeedSeconds` is aborted.
    public var lowSpeedBytesPerSecond = 1024
    public var lowSpeedSeconds = 30
    /// Connections kept open per host.
    public var maxHostConnections = 64
    /// The most a whole transfer may take (nil: no limit but the low-speed rule).
    public var totalTimeoutMilliseconds: Int?
    /// A PUT of a file's bytes to a plain-HTTP store goes by `sendfile` (`FileSender`), not curl.
    public var sendFilesDirectly = true

    public init() {}
}

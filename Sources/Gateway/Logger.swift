import Dispatch
import Synchronization
#if canImport(Glibc)
import Glibc
import Striped
#endif

/// A value in a log line.
public enum LogValue: Sendable, ExpressibleByStringLiteral, ExpressibleByIntegerLiteral {
    case string(String)
    case int(Int)
    case double(Double)
    case bool(Bool)

    public init(stringLiteral value: String) { self = .string(value) }
    public init(integerLiteral value: Int) { self = .int(value) }
}

/// Where finished log lines go.
public protocol LogSink: Sendable {
    func write(_ line: [UInt8])
}

/// JSON lines on stderr, one per event. Lines are gathered in memory and written in batches
/// (at most every 50 ms, or at once past 64 KiB) so logging costs few system calls under load.
/// Callers must never pass a secret: tokens, keys and signatures are not logged anywhere.
public final class Logger: Sendable {
    public let level: Configuration.LogLevel
    private let sink: any LogSink

    public init(level: Configuration.LogLevel, sink: any LogSink = StderrSink()) {
        self.level = level
        self.sink = sink
    }

    public func debug(_ message: String, _ fields: KeyValuePairs<String, LogValue> = [:]) { log(.debug, message, fields) }
    public func info(_ message: String, _ fields: KeyValuePairs<String, LogValue> = [:]) { log(.info, message, fields) }
    public func warn(_ message: String, _ fields: KeyValuePairs<String, LogValue> = [:]) { log(.warn, message, fields) }
    public func error(_ message: String, _ fields: KeyValuePairs<String, LogValue> = [:]) { log(.error, message, fields) }

    public func log(_ lineLevel: Configuration.LogLevel, _ message: String, _ fields: KeyValuePairs<String, LogValue>) {
        guard lineLevel >= level else { return }
        var line = JSONText()
        line.begin()
        line.field("ts", .string(Timestamp.now()))
        line.field("level", .string(Self.name(lineLevel)))
        line.field("msg", .string(message))
        for (key, value) in fields { line.field(key, value) }
        line.end()
        line.bytes.append(0x0A)
        sink.write(line.bytes)
    }

    /// The per-request line, written straight into bytes: it runs for every request, so it
    /// skips the general path's enum boxing and intermediate strings.
    public func request(id: String, method: String, route: String, path: Substring, status: Int,
                        microseconds: Int, remote: String) {
        guard level <= .info else { return }
        var line = JSONText()
        line.bytes.reserveCapacity(256)
        line.bytes.append(contentsOf: #"{"ts":""#.utf8)
        Timestamp.append(to: &line.bytes)
        line.bytes.append(contentsOf: #"","level":"info","msg":"request","requestId":"#.utf8)
        line.appendString(id)
        line.bytes.append(contentsOf: #","method":"#.utf8)
        line.appendString(method)
        line.bytes.append(contentsOf: #","route":"#.utf8)
        line.appendString(route)
        line.bytes.append(contentsOf: #","path":"#.utf8)
        line.appendString(String(path.prefix(256)))
        line.bytes.append(contentsOf: #","status":"#.utf8)
        line.bytes.append(contentsOf: String(status).utf8)
        line.bytes.append(contentsOf: #","durationMs":"#.utf8)
        line.bytes.append(contentsOf: String(microseconds / 1000).utf8)
        let fraction = microseconds % 1000
        line.bytes.append(UInt8(ascii: "."))
        line.bytes.append(UInt8(48 + fraction / 100))
        line.bytes.append(UInt8(48 + fraction / 10 % 10))
        line.bytes.append(UInt8(48 + fraction % 10))
        line.bytes.append(contentsOf: #","remote":"#.utf8)
        line.appendString(remote)
        line.bytes.append(contentsOf: "}\n".utf8)
        sink.write(line.bytes)
    }

    private static func name(_ level: Configuration.LogLevel) -> String {
        switch level {
        case .debug: return "debug"
        case .info: return "info"
        case .warn: return "warn"
        case .error: return "error"
        }
    }
}

/// Batched writes to file descriptor 2.
public final class StderrSink: LogSink {
    private let pending = PendingBytes()
    private let timer: Mutex<(any DispatchSourceTimer)?>

    public init() {
        let source = DispatchSource.makeTimerSource(queue: DispatchQueue(label: "log.flush"))
        source.schedule(deadline: .now() + .milliseconds(50), repeating: .milliseconds(50))
        source.setEventHandler { [pending] in pending.flush() }
        source.activate()
        timer = Mutex(source)
    }

    deinit { timer.withLock { $0?.cancel() } }

    public func write(_ line: [UInt8]) {
        if pending.append(line) >= 32 * 1024 { pending.flush() }
    }

    /// Writes whatever is pending now (also called at shutdown).
    public func flush() { pending.flush() }
}

/// Bytes waiting to be written to stderr, striped by thread so concurrent requests do not
/// queue on one lock. Lines from one thread keep their order.
final class PendingBytes: Sendable {
    private let buffers = Striped<[UInt8]> { [] }
    private let writer = Mutex(())

    /// Appends and returns how much is now pending in this stripe.
    func append(_ bytes: [UInt8]) -> Int {
        buffers.withLocalLock { b in
            b.append(contentsOf: bytes)
            return b.count
        }
    }

    func flush() {
        writer.withLock { _ in
            for stripe in buffers.stripes {
                let bytes = stripe.lock.withLock { b -> [UInt8] in
                    defer { b.removeAll(keepingCapacity: true) }
                    return b
                }
                Self.writeAll(bytes)
            }
        }
    }

    private static func writeAll(_ bytes: [UInt8]) {
        var offset = 0
        while offset < bytes.count {
            let n = bytes.withUnsafeBytes { Glibc.write(2, $0.baseAddress! + offset, bytes.count - offset) }
            if n < 0 { if errno == EINTR { continue } else { return } }
            offset += n
        }
    }
}

/// Collects lines in memory (tests).
public final class MemorySink: LogSink {
    private let lines = Mutex<[String]>([])
    public init() {}
    public func write(_ line: [UInt8]) {
        lines.withLock { $0.append(String(decoding: line, as: UTF8.self)) }
    }
    public var all: [String] { lines.withLock { $0 } }
}

/// UTC time as `2026-11-29T22:50:01.123Z`, formatted at most once per second plus milliseconds.
enum Timestamp {
    private static let cache = Striped<(Int, String)> { (-1, "") }

    static func now() -> String {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(24)
        append(to: &bytes)
        return String(decoding: bytes, as: UTF8.self)
    }

    /// A moment given in Unix milliseconds, in the same form.
    static func rfc3339(milliseconds: Int64) -> String {
        var t = time_t(milliseconds / 1000)
        var parts = tm()
        gmtime_r(&t, &parts)
        let ms = Int(milliseconds % 1000)
        func pad(_ n: Int, _ width: Int) -> String { String(repeating: "0", count: max(0, width - String(n).count)) + String(n) }
        return "\(pad(Int(parts.tm_year) + 1900, 4))-\(pad(Int(parts.tm_mon) + 1, 2))-\(pad(Int(parts.tm_mday), 2))T"
            + "\(pad(Int(parts.tm_hour), 2)):\(pad(Int(parts.tm_min), 2)):\(pad(Int(parts.tm_sec), 2)).\(pad(ms, 3))Z"
    }

    /// Appends the same text as `now()` to `bytes`.
    static func append(to bytes: inout [UInt8]) {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        let second = Int(ts.tv_sec)
        var prefix = cache.withLocalLock { c -> String in
            if c.0 != second {
                var t = time_t(second)
                var parts = tm()
                gmtime_r(&t, &parts)
                func two(_ n: Int32) -> String { n < 10 ? "0\(n)" : "\(n)" }
                c = (second, "\(parts.tm_year + 1900)-\(two(parts.tm_mon + 1))-\(two(parts.tm_mday))T"
                     + "\(two(parts.tm_hour)):\(two(parts.tm_min)):\(two(parts.tm_sec))")
            }
            return c.1
        }
        prefix.withUTF8 { bytes.append(contentsOf: $0) }
        let ms = Int(ts.tv_nsec) / 1_000_000
        bytes.append(UInt8(ascii: "."))
        bytes.append(UInt8(48 + ms / 100))
        bytes.append(UInt8(48 + ms / 10 % 10))
        bytes.append(UInt8(48 + ms % 10))
        bytes.append(UInt8(ascii: "Z"))
    }
}

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
    /// Appends one line that `build` writes to the end of the bytes it is given (the request
    /// log's path: a sink that buffers lets it write in place, with no line of its own).
    func write(building build: (inout [UInt8]) -> Void)
}

extension LogSink {
    public func write(building build: (inout [UInt8]) -> Void) {
        var line: [UInt8] = []
        line.reserveCapacity(256)
        build(&line)
        write(line)
    }
}

/// JSON lines on stderr, one per event. Lines are gathered in memory and written in batches
/// (at most every 50 ms, or at once past 64 KiB) so logging costs few system calls under load.
/// Callers must never pass a secret: tokens, keys and signatures are not logged anywhere.
public final class Logger: Sendable {
    /// How much is logged: lines of this level and above.
    public enum Level: Int, Sendable, Comparable {
        case debug, info, warn, error
        public static func < (a: Level, b: Level) -> Bool { a.rawValue < b.rawValue }
    }

    public let level: Logger.Level
    private let sink: any LogSink

    public init(level: Logger.Level, sink: any LogSink = StderrSink()) {
        self.level = level
        self.sink = sink
    }

    public func debug(_ message: String, _ fields: KeyValuePairs<String, LogValue> = [:]) { log(.debug, message, fields) }
    public func info(_ message: String, _ fields: KeyValuePairs<String, LogValue> = [:]) { log(.info, message, fields) }
    public func warn(_ message: String, _ fields: KeyValuePairs<String, LogValue> = [:]) { log(.warn, message, fields) }
    public func error(_ message: String, _ fields: KeyValuePairs<String, LogValue> = [:]) { log(.error, message, fields) }

    /// An `info` line written whatever the level: what an operator must see (where the server listens).
    public func always(_ message: String, _ fields: KeyValuePairs<String, LogValue> = [:]) { write(.info, message, fields) }

    public func log(_ lineLevel: Logger.Level, _ message: String, _ fields: KeyValuePairs<String, LogValue>) {
        guard lineLevel >= level else { return }
        write(lineLevel, message, fields)
    }

    private func write(_ lineLevel: Logger.Level, _ message: String, _ fields: KeyValuePairs<String, LogValue>) {
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

    /// The per-request line, written straight into the sink's bytes: it runs for every
    /// request, so it skips the general path's enum boxing, intermediate strings and a line
    /// of its own.
    public func request(
        id: String, method: String, route: String, path: Substring, status: Int,
        microseconds: Int, remote: String
    ) {
        guard level <= .info else { return }
        sink.write { bytes in
            var line = JSONText()
            swap(&line.bytes, &bytes)
            defer { swap(&line.bytes, &bytes) }
            line.appendRaw(#"{"ts":""#)
            Timestamp.append(to: &line.bytes)
            line.appendRaw(#"","level":"info","msg":"request","requestId":"#)
            line.appendString(id)
            line.appendRaw(#","method":"#)
            line.appendString(method)
            line.appendRaw(#","route":"#)
            line.appendString(route)
            line.appendRaw(#","path":"#)
            // At most 256 bytes of the path, cut where a character starts (by bytes: walking
            // characters to count them cost more than the rest of the line).
            path.utf8.withContiguousStorageIfAvailable { all in
                var cut = min(all.count, 256)
                while cut < all.count && cut > 0 && all[cut] & 0xC0 == 0x80 { cut -= 1 }
                line.appendString(utf8: UnsafeBufferPointer(rebasing: all[..<cut]))
            } ?? line.appendString(String(decoding: path.utf8.prefix(256), as: UTF8.self))
            line.appendRaw(#","status":"#)
            line.appendDigits(status)
            line.appendRaw(#","durationMs":"#)
            let micros = max(0, microseconds)
            line.appendDigits(micros / 1000)
            let fraction = micros % 1000
            line.bytes.append(UInt8(ascii: "."))
            line.bytes.append(UInt8(48 + fraction / 100))
            line.bytes.append(UInt8(48 + fraction / 10 % 10))
            line.bytes.append(UInt8(48 + fraction % 10))
            line.appendRaw(#","remote":"#)
            line.appendString(remote)
            line.appendRaw("}\n")
        }
    }

    private static func name(_ level: Logger.Level) -> String {
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

    public func write(building build: (inout [UInt8]) -> Void) {
        if pending.append(building: build) >= 32 * 1024 { pending.flush() }
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

    /// Lets `build` append to this thread's stripe under its lock; returns what is pending there.
    func append(building build: (inout [UInt8]) -> Void) -> Int {
        buffers.withLocalLock { b in
            build(&b)
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

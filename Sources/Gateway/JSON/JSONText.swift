/// A tiny JSON object writer for log lines and fixed answers, where Foundation's encoder
/// would cost more than the work being logged.
struct JSONText {
    var bytes: [UInt8] = []
    private var first = true

    mutating func begin(capacity: Int = 256) {
        bytes.reserveCapacity(capacity)
        bytes.append(UInt8(ascii: "{"))
        first = true
    }

    mutating func end() {
        bytes.append(UInt8(ascii: "}"))
    }

    mutating func field(_ key: String, _ value: LogValue) {
        if !first { bytes.append(UInt8(ascii: ",")) }
        first = false
        appendString(key)
        bytes.append(UInt8(ascii: ":"))
        switch value {
        case .string(let s): appendString(s)
        case .int(let n): bytes.append(contentsOf: String(n).utf8)
        case .double(let d): bytes.append(contentsOf: (d.isFinite ? String(d) : "null").utf8)
        case .bool(let b): bytes.append(contentsOf: (b ? "true" : "false").utf8)
        }
    }

    /// A JSON string literal (RFC 8259 §7): quote, backslash and control characters escaped.
    /// Runs of plain bytes are copied whole.
    mutating func appendString(_ text: String) {
        var text = text
        text.withUTF8 { appendString(utf8: $0) }
    }

    /// `appendString` for UTF-8 bytes already in hand (a request's path, say).
    mutating func appendString(utf8: UnsafeBufferPointer<UInt8>) {
        bytes.append(UInt8(ascii: "\""))
        var runStart = 0
        var i = 0
        while i < utf8.count {
            // Eight plain bytes at a time: long values (presigned URLs) rarely need escaping.
            if i + 8 <= utf8.count,
                !Self.mayNeedEscape(UnsafeRawPointer(utf8.baseAddress! + i).loadUnaligned(as: UInt64.self))
            {
                i += 8
                continue
            }
            let byte = utf8[i]
            i += 1
            guard byte < 0x20 || byte == 0x22 || byte == 0x5C || byte == 0x7F else { continue }
            let at = i - 1
            bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[runStart..<at]))
            runStart = at + 1
            switch byte {
            case 0x22: bytes.append(contentsOf: [92, 34])
            case 0x5C: bytes.append(contentsOf: [92, 92])
            case 0x0A: bytes.append(contentsOf: [92, UInt8(ascii: "n")])
            case 0x0D: bytes.append(contentsOf: [92, UInt8(ascii: "r")])
            case 0x09: bytes.append(contentsOf: [92, UInt8(ascii: "t")])
            default:
                let hex = Array("0123456789abcdef".utf8)
                bytes.append(contentsOf: [92, UInt8(ascii: "u"), 48, 48, hex[Int(byte >> 4)], hex[Int(byte & 0xF)]])
            }
        }
        bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[runStart...]))
        bytes.append(UInt8(ascii: "\""))
    }

    /// Bytes that need no escaping, from a literal.
    @inline(__always)
    mutating func appendRaw(_ text: StaticString) {
        text.withUTF8Buffer { bytes.append(contentsOf: $0) }
    }

    /// A non-negative integer's digits, without building a String.
    mutating func appendDigits(_ value: Int) {
        var n = value < 0 ? 0 : value
        var digits: (UInt64, UInt64, UInt64) = (0, 0, 0)  // 24 bytes: Int has at most 19 digits
        withUnsafeMutableBytes(of: &digits) { buffer in
            var at = buffer.count
            repeat {
                at -= 1
                buffer[at] = UInt8(48 + n % 10)
                n /= 10
            } while n > 0 && at > 0
            bytes.append(contentsOf: buffer[at...])
        }
    }

    /// Whether any of eight bytes is below 0x20, a quote, a backslash or DEL (the classic
    /// "has a byte less than n" and "has a zero byte" word tests; exact, no false negative).
    @inline(__always)
    static func mayNeedEscape(_ word: UInt64) -> Bool {
        let ones: UInt64 = 0x0101_0101_0101_0101, highs: UInt64 = 0x8080_8080_8080_8080
        func hasZeroByte(_ x: UInt64) -> Bool { (x &- ones) & ~x & highs != 0 }
        return (word &- ones &* 0x20) & ~word & highs != 0
            || hasZeroByte(word ^ (ones &* 0x22)) || hasZeroByte(word ^ (ones &* 0x5C)) || hasZeroByte(word ^ (ones &* 0x7F))
    }

    /// A string field whose value `write` appends itself, for values built from bytes that
    /// never need escaping (URLs, timestamps): they go straight into the answer.
    mutating func plainStringField(_ key: String, _ write: (inout [UInt8]) -> Void) {
        if !first { bytes.append(UInt8(ascii: ",")) }
        first = false
        appendString(key)
        bytes.append(contentsOf: #":""#.utf8)
        let start = bytes.count
        write(&bytes)
        assert(
            bytes[start...].allSatisfy { $0 >= 0x20 && $0 < 0x7F && $0 != 0x22 && $0 != 0x5C },
            "a plain string field needs escaping")
        bytes.append(UInt8(ascii: "\""))
    }

    /// A field whose value is already JSON.
    mutating func rawField(_ key: String, _ json: [UInt8]) {
        if !first { bytes.append(UInt8(ascii: ",")) }
        first = false
        appendString(key)
        bytes.append(UInt8(ascii: ":"))
        bytes.append(contentsOf: json)
    }

    /// A field whose value is an object of strings, written in place.
    mutating func stringsField(_ key: String, _ pairs: [(String, String)]) {
        if !first { bytes.append(UInt8(ascii: ",")) }
        first = false
        appendString(key)
        bytes.append(contentsOf: ":{".utf8)
        for (index, (name, value)) in pairs.enumerated() {
            if index > 0 { bytes.append(UInt8(ascii: ",")) }
            appendString(name)
            bytes.append(UInt8(ascii: ":"))
            appendString(value)
        }
        bytes.append(UInt8(ascii: "}"))
    }

    static func object(_ fields: KeyValuePairs<String, LogValue>) -> [UInt8] {
        var text = JSONText()
        text.begin()
        for (key, value) in fields { text.field(key, value) }
        text.end()
        return text.bytes
    }
}

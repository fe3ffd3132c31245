/// A tiny JSON object writer for log lines and fixed answers, where Foundation's encoder
/// would cost more than the work being logged.
struct JSONText {
    var bytes: [UInt8] = []
    private var first = true

    mutating func begin() {
        bytes.reserveCapacity(256)
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
    mutating func appendString(_ s: String) {
        bytes.append(UInt8(ascii: "\""))
        if !s.utf8.contains(where: { $0 < 0x20 || $0 == 0x22 || $0 == 0x5C || $0 == 0x7F }) {
            bytes.append(contentsOf: s.utf8)
            bytes.append(UInt8(ascii: "\""))
            return
        }
        let hex = Array("0123456789abcdef".utf8)
        for byte in s.utf8 {
            switch byte {
            case UInt8(ascii: "\""): bytes.append(contentsOf: [92, 34])
            case UInt8(ascii: "\\"): bytes.append(contentsOf: [92, 92])
            case 0x0A: bytes.append(contentsOf: [92, UInt8(ascii: "n")])
            case 0x0D: bytes.append(contentsOf: [92, UInt8(ascii: "r")])
            case 0x09: bytes.append(contentsOf: [92, UInt8(ascii: "t")])
            case 0..<0x20, 0x7F:
                bytes.append(contentsOf: [92, UInt8(ascii: "u"), 48, 48, hex[Int(byte >> 4)], hex[Int(byte & 0xF)]])
            default: bytes.append(byte)
            }
        }
        bytes.append(UInt8(ascii: "\""))
    }

    static func object(_ fields: KeyValuePairs<String, LogValue>) -> [UInt8] {
        var text = JSONText()
        text.begin()
        for (key, value) in fields { text.field(key, value) }
        text.end()
        return text.bytes
    }
}

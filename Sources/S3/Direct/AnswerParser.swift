/// The answer to a request `FileSender` sent, read from its bytes as they arrive (RFC 9112):
/// interim 1xx answers skipped, the final answer's status and header fields (names in lower
/// case, as curl's answers have them), and a body framed by Content-Length, by chunked coding
/// or by the connection's end. Bounded: a head past `headLimit` or a body past `bodyLimit` is a
/// protocol error, not memory the store may make us hold.
struct AnswerParser {
    enum Step: Equatable {
        case needMore
        /// The whole answer; `keepAlive` when the connection may carry the next request.
        case done(status: Int, headers: [Field], body: [UInt8], keepAlive: Bool)
    }

    struct Field: Equatable {
        var name: String
        var value: String
    }

    let headLimit: Int
    let bodyLimit: Int
    /// Everything of the answer received and not yet consumed (interim answers are dropped).
    private var buffer: [UInt8] = []

    init(headLimit: Int = 64 * 1024, bodyLimit: Int = 64 * 1024) {
        self.headLimit = headLimit
        self.bodyLimit = bodyLimit
    }

    /// Whether any byte of an answer has arrived.
    var hasStarted: Bool { !buffer.isEmpty }

    /// Takes the bytes that arrived; `.done` once the answer is whole.
    mutating func feed(_ bytes: UnsafeRawBufferPointer) throws(S3Error) -> Step {
        buffer.append(contentsOf: bytes)
        return try step(atEnd: false)
    }

    /// The connection ended: an answer framed by its end is whole now; any other is cut short.
    mutating func finish() throws(S3Error) -> Step {
        guard case .done(let status, let headers, let body, _) = try step(atEnd: true) else {
            throw Self.cutShort
        }
        return .done(status: status, headers: headers, body: body, keepAlive: false)
    }

    static let cutShort = S3Error(kind: .transport, status: 0, code: "ConnectionReset", message: "the store's answer was cut short")

    private mutating func step(atEnd: Bool) throws(S3Error) -> Step {
        while true {
            guard let headEnd = Self.headEnd(in: buffer) else {
                if buffer.count > headLimit { throw Self.violation("an answer head larger than \(headLimit) bytes") }
                return .needMore
            }
            guard headEnd <= headLimit else { throw Self.violation("an answer head larger than \(headLimit) bytes") }
            let head = try Self.parseHead(buffer[..<headEnd])
            if (100..<200).contains(head.status) {
                // 100 Continue and its kin come before the answer; the answer follows.
                buffer.removeFirst(headEnd)
                continue
            }
            let rest = buffer[headEnd...]
            if head.status == 204 || head.status == 304 {
                return try whole(head, body: [], consumed: headEnd, framedByEnd: false)
            }
            if head.chunked {
                guard let (body, used) = try Self.dechunk(rest, limit: bodyLimit) else {
                    if atEnd { throw Self.cutShort }
                    return .needMore
                }
                return try whole(head, body: body, consumed: headEnd + used, framedByEnd: false)
            }
            if let length = head.contentLength {
                guard length <= bodyLimit else { throw Self.violation("an answer body of \(length) bytes, past \(bodyLimit)") }
                guard rest.count >= length else {
                    if atEnd { throw Self.cutShort }
                    return .needMore
                }
                return try whole(head, body: Array(rest.prefix(length)), consumed: headEnd + length, framedByEnd: false)
            }
            // Neither: the body runs to the connection's end.
            guard rest.count <= bodyLimit else { throw Self.violation("an answer body past \(bodyLimit) bytes") }
            guard atEnd else { return .needMore }
            return try whole(head, body: Array(rest), consumed: buffer.count, framedByEnd: true)
        }
    }

    private func whole(_ head: Head, body: [UInt8], consumed: Int, framedByEnd: Bool) throws(S3Error) -> Step {
        // Bytes past the answer: a store that sends what we did not ask for cannot be trusted
        // with the next request on this connection.
        let keepAlive = head.keepAlive && !framedByEnd && consumed == buffer.count
        return .done(status: head.status, headers: head.fields, body: body, keepAlive: keepAlive)
    }

    struct Head {
        var status: Int
        var fields: [Field]
        var contentLength: Int?
        var chunked: Bool
        var keepAlive: Bool
    }

    /// The index just past the blank line that ends a head, if it has arrived.
    static func headEnd(in bytes: [UInt8]) -> Int? {
        guard bytes.count >= 4 else { return nil }
        var i = 3
        while i < bytes.count {
            if bytes[i] == 0x0A && bytes[i - 1] == 0x0D && bytes[i - 2] == 0x0A && bytes[i - 3] == 0x0D { return i + 1 }
            i += 1
        }
        return nil
    }

    static func parseHead(_ bytes: ArraySlice<UInt8>) throws(S3Error) -> Head {
        var lines = bytes.dropLast(4).split(separator: 0x0A, omittingEmptySubsequences: false).map { line in
            line.last == 0x0D ? line.dropLast() : line
        }
        guard !lines.isEmpty else { throw violation("an empty answer head") }
        let statusLine = lines.removeFirst()
        // HTTP/1.x SP 3DIGIT [SP reason]
        guard statusLine.count >= 12, statusLine.starts(with: "HTTP/1.".utf8),
            statusLine[statusLine.startIndex + 8] == 0x20
        else {
            throw violation("an answer without an HTTP/1.x status line")
        }
        let digits = statusLine[(statusLine.startIndex + 9)..<(statusLine.startIndex + 12)]
        guard digits.allSatisfy({ (0x30...0x39).contains($0) }) else { throw violation("an answer with a bad status") }
        let status = digits.reduce(0) { $0 * 10 + Int($1 - 0x30) }
        // HTTP/1.1 keeps the connection unless told to close; HTTP/1.0 closes it unless told not to.
        var keepAlive = statusLine[statusLine.startIndex + 7] == UInt8(ascii: "1")
        var closes = false
        var fields: [Field] = []
        var contentLength: Int?
        var chunked = false
        for line in lines {
            guard let colon = line.firstIndex(of: UInt8(ascii: ":")), colon > line.startIndex else {
                throw violation("an answer header line without a name")
            }
            let name = String(decoding: line[..<colon], as: UTF8.self).lowercased()
            var value = line[(colon + 1)...]
            while let first = value.first, first == 0x20 || first == 0x09 { value.removeFirst() }
            while let last = value.last, last == 0x20 || last == 0x09 { value.removeLast() }
            let text = String(decoding: value, as: UTF8.self)
            switch name {
            case "content-length":
                guard let length = Int(text), length >= 0, contentLength == nil || contentLength == length else {
                    throw violation("an answer with a bad Content-Length")
                }
                contentLength = length
            case "transfer-encoding":
                guard text.lowercased() == "chunked" else { throw violation("an answer in a transfer coding other than chunked") }
                chunked = true
            case "connection":
                let options = text.lowercased().split(separator: ",").map { $0.filter { $0 != " " && $0 != "\t" } }
                if options.contains("close") { closes = true }
                if options.contains("keep-alive") { keepAlive = true }
            default:
                break
            }
            fields.append(Field(name: name, value: text))
        }
        if chunked && contentLength != nil { throw violation("an answer with both Content-Length and chunked coding") }
        return Head(
            status: status, fields: fields, contentLength: contentLength, chunked: chunked, keepAlive: keepAlive && !closes)
    }

    /// A whole chunked body and how many bytes it took (trailers skipped), nil while incomplete.
    static func dechunk(_ bytes: ArraySlice<UInt8>, limit: Int) throws(S3Error) -> ([UInt8], Int)? {
        var body: [UInt8] = []
        var i = bytes.startIndex
        func line(from start: Int) -> Range<Int>? {
            var j = start
            while j + 1 < bytes.endIndex {
                if bytes[j] == 0x0D && bytes[j + 1] == 0x0A { return start..<j }
                j += 1
            }
            return nil
        }
        while true {
            guard let sizeLine = line(from: i) else {
                if bytes.endIndex - i > 1024 { throw violation("a chunk size line past 1024 bytes") }
                return nil
            }
            var size = 0
            var digits = 0
            for byte in bytes[sizeLine] {
                guard let value = hexValue(byte) else { break }  // a chunk extension follows
                guard digits < 15 else { throw violation("a chunk size past any body we take") }
                size = size * 16 + value
                digits += 1
            }
            guard digits > 0 else { throw violation("a chunk without a size") }
            i = sizeLine.upperBound + 2
            if size == 0 {
                // Trailer fields, then the blank line.
                while true {
                    guard let trailer = line(from: i) else { return nil }
                    i = trailer.upperBound + 2
                    if trailer.isEmpty { return (body, i - bytes.startIndex) }
                }
            }
            guard body.count + size <= limit else { throw violation("an answer body past \(limit) bytes") }
            guard bytes.endIndex - i >= size + 2 else { return nil }
            body += bytes[i..<(i + size)]
            guard bytes[i + size] == 0x0D, bytes[i + size + 1] == 0x0A else { throw violation("a chunk not ended by CRLF") }
            i += size + 2
        }
    }

    private static func hexValue(_ byte: UInt8) -> Int? {
        switch byte {
        case 0x30...0x39: return Int(byte - 0x30)
        case 0x41...0x46: return Int(byte - 0x41 + 10)
        case 0x61...0x66: return Int(byte - 0x61 + 10)
        default: return nil
        }
    }

    static func violation(_ message: String) -> S3Error {
        S3Error(kind: .protocolViolation, status: 0, code: "BadResponse", message: message)
    }
}

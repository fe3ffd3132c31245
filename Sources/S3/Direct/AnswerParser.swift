/// The answer to a request `FileSender` sent, read from its bytes as they arrive (RFC 9112):
/// interim 1xx answers skipped (a few), the final answer's status and header fields (names in
/// lower case, as curl's answers have them), and a body framed by Content-Length, by chunked
/// coding or by the connection's end. Each byte is looked at once, whatever the pieces it comes
/// in. Bounded as curl is: a head (or the trailers) past `headLimit` is a protocol error; of a
/// body, `bodyLimit` bytes are kept and the rest read and dropped; past `answerLimit` bytes of
/// body an error answer is taken as it stands (the connection then not kept) and a success is a
/// protocol error.
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
    let answerLimit: Int
    /// Interim answers taken before the final one.
    static let interimLimit = 8

    private enum Phase {
        case head
        case body(Head, Framing)
        /// Whole; `cutOff` when its body was not read to its end.
        case finished(Head, cutOff: Bool)
    }

    private enum Framing {
        case length(remaining: Int)
        case chunks(Chunk)
        case untilEnd
    }

    private enum Chunk {
        case size, data(remaining: Int), dataEnd, trailers
    }

    private var phase = Phase.head
    /// The head's bytes so far, or the line (chunk size, chunk end, trailer) being read.
    private var pending: [UInt8] = []
    /// How much of `pending` the search for the head's end has looked at.
    private var scanned = 0
    private var body: [UInt8] = []
    private var bodyBytes = 0
    private var interim = 0
    private var trailerBytes = 0
    /// Bytes came after the whole answer.
    private var extra = false

    init(headLimit: Int = 64 * 1024, bodyLimit: Int = 64 * 1024, answerLimit: Int = 1 << 20) {
        self.headLimit = headLimit
        self.bodyLimit = bodyLimit
        self.answerLimit = answerLimit
    }

    /// Whether any byte of an answer has arrived.
    private(set) var hasStarted = false

    /// Takes the bytes that arrived; `.done` once the answer is whole.
    mutating func feed(_ bytes: UnsafeRawBufferPointer) throws(S3Error) -> Step {
        if !bytes.isEmpty { hasStarted = true }
        if case .head = phase {
            pending.append(contentsOf: bytes)
            try readHeads()
        } else if let error = consume(bytes) {
            throw error
        }
        return outcome()
    }

    /// The connection ended: an answer framed by its end is whole now; any other is cut short.
    mutating func finish() throws(S3Error) -> Step {
        if case .body(let head, .untilEnd) = phase { phase = .finished(head, cutOff: true) }
        guard case .done = outcome() else { throw Self.cutShort }
        return outcome()
    }

    static let cutShort = S3Error(kind: .transport, status: 0, code: "ConnectionReset", message: "the store's answer was cut short")

    private func outcome() -> Step {
        guard case .finished(let head, let cutOff) = phase else { return .needMore }
        // Kept only after a success read exactly to its end: after an error, or bytes nobody
        // asked for, the connection's next bytes cannot be trusted to start the next answer.
        let keepAlive = head.keepAlive && !cutOff && !extra && (200..<300).contains(head.status)
        return .done(status: head.status, headers: head.fields, body: body, keepAlive: keepAlive)
    }

    /// Heads in `pending`: interim ones dropped, the final one starts the body.
    private mutating func readHeads() throws(S3Error) {
        while case .head = phase {
            guard let end = Self.headEnd(in: pending, from: scanned) else {
                guard pending.count <= headLimit else { throw Self.violation("an answer head larger than \(headLimit) bytes") }
                scanned = max(0, pending.count - 2)
                return
            }
            guard end <= headLimit else { throw Self.violation("an answer head larger than \(headLimit) bytes") }
            let head = try Self.parseHead(pending[..<end])
            let rest = Array(pending[end...])
            pending = []
            scanned = 0
            if (100..<200).contains(head.status) {
                // 100 Continue and its kin come before the answer; a switch of protocols is not
                // an answer to a PUT.
                interim += 1
                guard head.status != 101, interim <= Self.interimLimit else {
                    throw Self.violation("interim answers the request did not ask for")
                }
                pending = rest
                continue
            }
            if head.status == 204 || head.status == 304 {
                phase = .finished(head, cutOff: false)
            } else if head.chunked {
                phase = .body(head, .chunks(.size))
            } else if let length = head.contentLength {
                phase = length == 0 ? .finished(head, cutOff: false) : .body(head, .length(remaining: length))
            } else {
                phase = .body(head, .untilEnd)
            }
            if let error = rest.withUnsafeBytes({ consume($0) }) { throw error }
        }
    }

    /// Body bytes (and, once whole, whatever follows): nil, or the answer's fault.
    private mutating func consume(_ bytes: UnsafeRawBufferPointer) -> S3Error? {
        var i = 0
        while i < bytes.count {
            switch phase {
            case .head:
                return Self.violation("body bytes before a head")
            case .finished:
                extra = true
                return nil
            case .body(let head, .length(let remaining)):
                let n = min(remaining, bytes.count - i)
                if let error = keep(UnsafeRawBufferPointer(rebasing: bytes[i..<(i + n)]), head) { return error }
                i += n
                if case .finished = phase { continue }
                phase = remaining == n ? .finished(head, cutOff: false) : .body(head, .length(remaining: remaining - n))
            case .body(let head, .untilEnd):
                if let error = keep(UnsafeRawBufferPointer(rebasing: bytes[i...]), head) { return error }
                i = bytes.count
            case .body(let head, .chunks(.data(let remaining))):
                let n = min(remaining, bytes.count - i)
                if let error = keep(UnsafeRawBufferPointer(rebasing: bytes[i..<(i + n)]), head) { return error }
                i += n
                if case .finished = phase { continue }
                phase = .body(head, .chunks(remaining == n ? .dataEnd : .data(remaining: remaining - n)))
            case .body(let head, .chunks(let chunk)):
                // A line: a chunk's size, the CRLF after its data, or a trailer field.
                guard let lf = bytes[i...].firstIndex(of: 0x0A) else {
                    pending += bytes[i...]
                    i = bytes.count
                    if pending.count > 1024 { return Self.violation("a chunked-coding line past 1024 bytes") }
                    continue
                }
                pending += bytes[i..<lf]
                i = lf + 1
                if pending.last == 0x0D { pending.removeLast() }
                let line = pending
                pending = []
                if line.count > 1024 { return Self.violation("a chunked-coding line past 1024 bytes") }
                switch chunk {
                case .size:
                    guard let size = Self.chunkSize(line) else { return Self.violation("a chunk without a readable size") }
                    phase = .body(head, .chunks(size == 0 ? .trailers : .data(remaining: size)))
                case .dataEnd:
                    guard line.isEmpty else { return Self.violation("a chunk not ended by CRLF") }
                    phase = .body(head, .chunks(.size))
                case .trailers:
                    trailerBytes += line.count + 2
                    if trailerBytes > headLimit { return Self.violation("trailers larger than \(headLimit) bytes") }
                    if line.isEmpty { phase = .finished(head, cutOff: false) }
                case .data:
                    break  // taken by the case above
                }
            }
        }
        return nil
    }

    /// Keeps body bytes up to `bodyLimit`; past `answerLimit`, an error answer ends as it stands.
    private mutating func keep(_ bytes: UnsafeRawBufferPointer, _ head: Head) -> S3Error? {
        bodyBytes += bytes.count
        if body.count < bodyLimit { body += bytes.prefix(bodyLimit - body.count) }
        guard bodyBytes <= answerLimit else {
            guard head.status >= 300 else { return Self.violation("an answer body past \(answerLimit) bytes") }
            phase = .finished(head, cutOff: true)
            return nil
        }
        return nil
    }

    struct Head {
        var status: Int
        var fields: [Field]
        var contentLength: Int?
        var chunked: Bool
        var keepAlive: Bool
    }

    /// The index just past the empty line that ends a head (CRLF or, as curl takes it, a bare
    /// LF), searching from `from`; nil while it has not arrived.
    static func headEnd(in bytes: [UInt8], from: Int) -> Int? {
        var j = max(0, from)
        while j < bytes.count {
            if bytes[j] == 0x0A {
                if j + 1 < bytes.count && bytes[j + 1] == 0x0A { return j + 2 }
                if j + 2 < bytes.count && bytes[j + 1] == 0x0D && bytes[j + 2] == 0x0A { return j + 3 }
            }
            j += 1
        }
        return nil
    }

    static func parseHead(_ bytes: ArraySlice<UInt8>) throws(S3Error) -> Head {
        var lines = bytes.split(separator: 0x0A).map { line in line.last == 0x0D ? line.dropLast() : line }
        guard !lines.isEmpty else { throw violation("an empty answer head") }
        let statusLine = lines.removeFirst()
        // HTTP/1.x SP 3DIGIT [SP reason]
        let s = statusLine.startIndex
        guard statusLine.count >= 12, statusLine.starts(with: "HTTP/1.".utf8), statusLine[s + 8] == 0x20,
            statusLine.count == 12 || statusLine[s + 12] == 0x20,
            statusLine[(s + 9)..<(s + 12)].allSatisfy({ (0x30...0x39).contains($0) })
        else {
            throw violation("an answer without an HTTP/1.x status line")
        }
        let status = statusLine[(s + 9)..<(s + 12)].reduce(0) { $0 * 10 + Int($1 - 0x30) }
        // HTTP/1.1 keeps the connection unless told to close; HTTP/1.0 closes it unless told not to.
        var keepAlive = statusLine[s + 7] == UInt8(ascii: "1")
        var closes = false
        var fields: [Field] = []
        var contentLength: Int?
        var codings: [String] = []
        for line in lines {
            // A line without a name is passed over, as curl does.
            guard let colon = line.firstIndex(of: UInt8(ascii: ":")), colon > line.startIndex else { continue }
            let name = String(decoding: line[..<colon], as: UTF8.self).lowercased()
            let text = trimmed(String(decoding: line[(colon + 1)...], as: UTF8.self))
            switch name {
            case "content-length":
                guard text.utf8.count <= 18, text.utf8.allSatisfy({ (0x30...0x39).contains($0) }), let length = Int(text),
                    contentLength == nil || contentLength == length
                else {
                    throw violation("an answer with a bad Content-Length")
                }
                contentLength = length
            case "transfer-encoding":
                codings += text.lowercased().split(separator: ",").map { trimmed(String($0)) }
            case "connection":
                let options = text.lowercased().split(separator: ",").map { trimmed(String($0)) }
                if options.contains("close") { closes = true }
                if options.contains("keep-alive") { keepAlive = true }
            default:
                break
            }
            fields.append(Field(name: name, value: text))
        }
        // A transfer coding overrides a length (RFC 9112 §6.3); one that does not end in chunked
        // runs to the connection's end.
        let chunked = codings.last == "chunked"
        if !codings.isEmpty {
            contentLength = nil
            if !chunked { closes = true }
        }
        return Head(
            status: status, fields: fields, contentLength: contentLength, chunked: chunked, keepAlive: keepAlive && !closes)
    }

    private static func trimmed(_ text: String) -> String {
        String(text.drop { $0 == " " || $0 == "\t" }.reversed().drop { $0 == " " || $0 == "\t" }.reversed())
    }

    /// A chunk-size line: hex digits, then nothing or an extension.
    static func chunkSize(_ line: [UInt8]) -> Int? {
        var size = 0, digits = 0
        for byte in line {
            guard let value = hexValue(byte) else {
                guard digits > 0, byte == UInt8(ascii: ";") || byte == 0x20 || byte == 0x09 else { return nil }
                break
            }
            guard digits < 15 else { return nil }
            size = size * 16 + value
            digits += 1
        }
        return digits > 0 ? size : nil
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

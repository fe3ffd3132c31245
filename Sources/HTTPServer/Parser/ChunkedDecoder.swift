/// Decodes a chunked request body (RFC 9112 §7.1) incrementally, pointing into the caller's
/// buffer instead of copying.
///
/// Each call to `decode` walks framing bytes until it reaches chunk data (returned as a range
/// of the buffer), the end of the body, or the end of the buffer. Chunk extensions are
/// checked and ignored; trailer fields are checked for size and control bytes and dropped.
public struct ChunkedDecoder: Sendable {
    public struct Step: Sendable, Equatable {
        /// Bytes of the buffer used, data included.
        public var consumed: Int
        /// Chunk data inside the consumed bytes, if any.
        public var data: Range<Int>?
        /// The last chunk and the trailer section have been read.
        public var finished: Bool
    }

    private enum State: Sendable {
        case size, sizeWhite, extensions, sizeLF, data, dataCR, dataLF, trailerLine, trailerLF, finalLF, done
    }

    private let limits: HTTPLimits
    private var state = State.size
    private var chunkSize = 0
    private var digits = 0
    private var lineBytes = 0
    private var trailerBytes = 0
    private var remaining = 0

    public init(limits: HTTPLimits = HTTPLimits()) {
        self.limits = limits
    }

    public var isFinished: Bool { state == .done }

    /// Throws `HTTPParseError` only.
    public mutating func decode(_ bytes: UnsafeRawBufferPointer) throws -> Step {
        var i = 0
        let count = bytes.count
        while i < count {
            let byte = bytes[i]
            switch state {
            case .size, .sizeWhite, .extensions, .sizeLF:
                try sizeLine(byte)
            case .data:
                let take = min(remaining, count - i)
                remaining -= take
                if remaining == 0 { state = .dataCR }
                return Step(consumed: i + take, data: i..<(i + take), finished: false)
            case .dataCR:
                guard byte == ByteClass.cr else { throw HTTPParseError.badChunk("Chunk data is longer than its size.") }
                state = .dataLF
            case .dataLF:
                guard byte == ByteClass.lf else { throw HTTPParseError.badChunk("Chunk data must end with CRLF.") }
                state = .size
            case .trailerLine, .trailerLF:
                try trailer(byte)
            case .finalLF:
                guard byte == ByteClass.lf else { throw HTTPParseError.badChunk("The chunked body must end with CRLF.") }
                state = .done
                return Step(consumed: i + 1, data: nil, finished: true)
            case .done:
                return Step(consumed: i, data: nil, finished: true)
            }
            if lineBytes > limits.maxChunkLineBytes { throw HTTPParseError.badChunk("The chunk-size line is too long.") }
            i += 1
        }
        return Step(consumed: count, data: nil, finished: state == .done)
    }

    /// One byte of a chunk-size line: hex digits, optional white space and extensions, CRLF.
    private mutating func sizeLine(_ byte: UInt8) throws {
        switch state {
        case .size:
            lineBytes += 1
            if let hex = ByteClass.hexValue(byte) {
                digits += 1
                // 15 hex digits is 2^60: far past any body we accept, and no overflow.
                guard digits <= 15 else { throw HTTPParseError.badChunk("The chunk size is too large.") }
                chunkSize = chunkSize * 16 + hex
            } else if digits == 0 {
                throw HTTPParseError.badChunk("A chunk size must start with a hex digit.")
            } else if byte == ByteClass.cr {
                state = .sizeLF
            } else if byte == UInt8(ascii: ";") {
                state = .extensions
            } else if ByteClass.isWhite(byte) {
                state = .sizeWhite
            } else {
                throw HTTPParseError.badChunk("The chunk size is not hexadecimal.")
            }
        case .sizeWhite:
            lineBytes += 1
            if byte == UInt8(ascii: ";") {
                state = .extensions
            } else if !ByteClass.isWhite(byte) {
                throw HTTPParseError.badChunk("Only a chunk extension may follow the chunk size.")
            }
        case .extensions:
            lineBytes += 1
            if byte == ByteClass.cr {
                state = .sizeLF
            } else if !ByteClass.isFieldValue(byte) {
                throw HTTPParseError.badChunk("A chunk extension has a control character.")
            }
        default:
            guard byte == ByteClass.lf else { throw HTTPParseError.badChunk("The chunk-size line must end with CRLF.") }
            if chunkSize == 0 {
                state = .trailerLine
            } else {
                state = .data
                remaining = chunkSize
            }
            lineBytes = 0
            digits = 0
            chunkSize = 0
        }
    }

    /// One byte of the trailer section: lines of field values, ended by an empty line.
    private mutating func trailer(_ byte: UInt8) throws {
        if state == .trailerLF {
            guard byte == ByteClass.lf else { throw HTTPParseError.badChunk("A trailer line must end with CRLF.") }
            lineBytes = 0
            state = .trailerLine
            return
        }
        if byte == ByteClass.cr {
            state = lineBytes == 0 ? .finalLF : .trailerLF
        } else {
            if lineBytes == 0 && ByteClass.isWhite(byte) { throw HTTPParseError.badChunk("Trailer fields may not be folded.") }
            guard ByteClass.isFieldValue(byte) else { throw HTTPParseError.badChunk("A trailer field has a control character.") }
            lineBytes += 1
        }
        trailerBytes += 1
        if trailerBytes > limits.maxTrailerBytes { throw HTTPParseError.badChunk("The trailer section is too large.") }
    }
}

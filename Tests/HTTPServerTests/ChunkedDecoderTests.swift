import Testing

@testable import HTTPServer

/// Decodes `text` fed in pieces of `step` bytes; returns the body or the error.
private func decode(_ text: String, piece: Int = Int.max) -> Result<String, HTTPParseError> {
    let bytes = Array(text.utf8)
    var decoder = ChunkedDecoder()
    var body: [UInt8] = []
    var buffer: [UInt8] = []
    var offset = 0
    while offset < bytes.count || !buffer.isEmpty {
        let end = min(bytes.count, offset + piece)
        buffer.append(contentsOf: bytes[offset..<end])
        offset = end
        while !buffer.isEmpty {
            do {
                let result = try step(&decoder, buffer).get()
                if let data = result.data { body.append(contentsOf: buffer[data]) }
                buffer.removeFirst(result.consumed)
                if result.finished {
                    return buffer.isEmpty && offset == bytes.count
                        ? .success(String(decoding: body, as: UTF8.self))
                        : .failure(.badChunk("bytes after the body"))
                }
                if result.consumed == 0 { break }
            } catch {
                return .failure(error)
            }
        }
        if offset == bytes.count { break }
    }
    return .failure(.badChunk("incomplete"))
}

/// One decode call over `bytes`, as a Result.
func step(_ decoder: inout ChunkedDecoder, _ bytes: [UInt8]) -> Result<ChunkedDecoder.Step, HTTPParseError> {
    bytes.withUnsafeBytes { raw in
        do { return .success(try decoder.decode(raw)) } catch { return .failure(error as? HTTPParseError ?? .badChunk("\(error)")) }
    }
}

struct ChunkCase: Sendable, CustomTestStringConvertible {
    let name: String
    let text: String
    let body: String?
    var testDescription: String { name }
}

let chunkCases: [ChunkCase] = [
    .init(name: "two chunks", text: "5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n", body: "hello world"),
    .init(name: "upper-case hex", text: "A\r\n0123456789\r\n0\r\n\r\n", body: "0123456789"),
    .init(name: "leading zeros", text: "0005\r\nhello\r\n0\r\n\r\n", body: "hello"),
    .init(name: "extensions", text: "5;name=value;q=\"a b\"\r\nhello\r\n0;last\r\n\r\n", body: "hello"),
    .init(name: "white space before an extension", text: "5 ;x\r\nhello\r\n0\r\n\r\n", body: "hello"),
    .init(name: "trailers", text: "5\r\nhello\r\n0\r\nX-Checksum: abc\r\nX-Other: 1\r\n\r\n", body: "hello"),
    .init(name: "empty body", text: "0\r\n\r\n", body: ""),
    .init(name: "size not hex", text: "g\r\nhello\r\n0\r\n\r\n", body: nil),
    .init(name: "empty size", text: "\r\nhello\r\n0\r\n\r\n", body: nil),
    .init(name: "negative size", text: "-5\r\nhello\r\n0\r\n\r\n", body: nil),
    .init(name: "size overflow", text: "1000000000000000\r\nx\r\n0\r\n\r\n", body: nil),
    .init(name: "data longer than size", text: "3\r\nhello\r\n0\r\n\r\n", body: nil),
    .init(name: "missing CRLF after data", text: "5\r\nhelloX\r\n0\r\n\r\n", body: nil),
    .init(name: "bare LF after size", text: "5\nhello\r\n0\r\n\r\n", body: nil),
    .init(name: "garbage after size", text: "5x\r\nhello\r\n0\r\n\r\n", body: nil),
    .init(name: "control byte in extension", text: "5;a\u{1}\r\nhello\r\n0\r\n\r\n", body: nil),
    .init(name: "folded trailer", text: "0\r\nX-A: 1\r\n 2\r\n\r\n", body: nil),
    .init(name: "bare LF ending trailers", text: "0\r\nX-A: 1\r\n\n", body: nil),
    .init(name: "0x prefix", text: "0x5\r\nhello\r\n0\r\n\r\n", body: nil),
]

@Test(arguments: chunkCases)
func chunkedBodyDecodes(_ c: ChunkCase) {
    for piece in [Int.max, 1, 3] {
        switch decode(c.text, piece: piece) {
        case .success(let body): #expect(body == c.body, "\(c.name) piece \(piece)")
        case .failure(let error): #expect(c.body == nil, "\(c.name) piece \(piece): \(error)")
        }
    }
}

@Test func longExtensionIsRefused() {
    var limits = HTTPLimits()
    limits.maxChunkLineBytes = 32
    var decoder = ChunkedDecoder(limits: limits)
    let bytes = Array(("5;" + String(repeating: "a", count: 64)).utf8)
    #expect(throws: HTTPParseError.self) { try step(&decoder, bytes).get() }
}

@Test func largeTrailerSectionIsRefused() {
    var limits = HTTPLimits()
    limits.maxTrailerBytes = 100
    var decoder = ChunkedDecoder(limits: limits)
    let bytes = Array(("0\r\n" + (0..<20).map { "X-\($0): vvvvvvv\r\n" }.joined()).utf8)
    #expect(throws: HTTPParseError.self) { try step(&decoder, bytes).get() }
}

// libFuzzer target for the HTTP/1.1 head parser and the chunked decoder (built by fuzz/run.sh
// together with Sources/HTTPServer, so internal types are visible).
//
// For every input: the head is parsed whole and byte by byte, and the two must agree (the
// incremental parser may not see what the whole one does not); a complete head's `consumed`
// must lie inside the input; the rest of the input goes through the chunked decoder, whole and
// in 7-byte pieces, which must agree as well and never report data outside the bytes they got.

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    let limits = HTTPLimits()

    var whole = HTTPHeadParser(limits: limits)
    let wholeOutcome = bytes.withUnsafeBytes { whole.parse($0) }
    var incremental = HTTPHeadParser(limits: limits)
    var pieceOutcome = HTTPHeadParser.Outcome.incomplete
    if !bytes.isEmpty {
        for end in 1...bytes.count {
            pieceOutcome = bytes[..<end].withUnsafeBytes { incremental.parse($0) }
            if case .incomplete = pieceOutcome { continue }
            break
        }
    }
    guard describe(wholeOutcome) == describe(pieceOutcome) else {
        fatalError("whole and byte-by-byte parses disagree: \(describe(wholeOutcome)) vs \(describe(pieceOutcome))")
    }
    var body = bytes[...]
    if case .complete(_, let consumed) = wholeOutcome {
        precondition(consumed > 0 && consumed <= bytes.count, "consumed \(consumed) of \(bytes.count)")
        body = bytes[consumed...]
    }
    let a = decodeChunked(Array(body), piece: max(1, body.count), limits: limits)
    let b = decodeChunked(Array(body), piece: 7, limits: limits)
    guard a == b else { fatalError("chunked decoding depends on how the bytes arrive: \(a) vs \(b)") }
    return 0
}

private func describe(_ outcome: HTTPHeadParser.Outcome) -> String {
    switch outcome {
    case .incomplete: return "incomplete"
    case .invalid(let error): return "invalid \(error.status) \(error.code)"
    case .complete(let head, let consumed):
        let fields = head.headers.fields.map { "\($0.name)=\($0.value)" }.joined(separator: "|")
        return "complete \(head.method) \(head.target) \(head.version) \(head.framing) \(head.keepAlive) \(fields) \(consumed)"
    }
}

/// Decodes `input` fed `piece` bytes at a time; returns the body bytes and how it ended.
private func decodeChunked(_ input: [UInt8], piece: Int, limits: HTTPLimits) -> String {
    var decoder = ChunkedDecoder(limits: limits)
    var buffer: [UInt8] = []
    var output: [UInt8] = []
    var offset = 0
    while true {
        if offset < input.count {
            let end = min(input.count, offset + piece)
            buffer += input[offset..<end]
            offset = end
        }
        let step: ChunkedDecoder.Step
        do {
            step = try buffer.withUnsafeBytes { try decoder.decode($0) }
        } catch {
            return "error \(output.count) \(error)"
        }
        precondition(step.consumed <= buffer.count, "consumed past the buffer")
        if let range = step.data {
            precondition(range.lowerBound >= 0 && range.upperBound <= step.consumed, "data outside what was consumed")
            output += buffer[range]
        }
        buffer.removeFirst(step.consumed)
        if step.finished { return "done \(output) \(buffer.count + input.count - offset)" }
        if step.consumed == 0 && offset >= input.count { return "incomplete \(output)" }
    }
}

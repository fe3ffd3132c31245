#if canImport(Glibc)
    import Glibc
#endif

/// Finds and parses one request head (request line and header section, RFC 9112 §2–§5) at the
/// start of the caller's buffer.
///
/// Incremental: call `parse` again with the same bytes plus whatever arrived since; it resumes
/// its scan where it stopped, so feeding a head byte by byte costs no more than feeding it
/// whole. Bounded: the request line, header section and field count are checked while
/// scanning, so an endless head is refused as soon as it crosses a limit. Lines end in CRLF;
/// a bare CR or LF is refused. `reset()` before the next request.
public struct HTTPHeadParser: Sendable {
    public enum Outcome: Sendable {
        case incomplete
        case complete(HTTPRequestHead, consumed: Int)
        case invalid(HTTPParseError)
    }

    public let limits: HTTPLimits
    private var scanned = 0
    private var lineStart = 0
    private var requestLineStart = 0
    private var requestLineEnd: Int?
    private var headerCount = 0

    public init(limits: HTTPLimits = HTTPLimits()) {
        self.limits = limits
    }

    public mutating func reset() {
        scanned = 0
        lineStart = 0
        requestLineStart = 0
        requestLineEnd = nil
        headerCount = 0
    }

    /// Whether any byte of a head has been seen (for telling idle from slow).
    public var hasStarted: Bool { scanned > 0 }

    public mutating func parse(_ bytes: UnsafeRawBufferPointer) -> Outcome {
        let count = bytes.count
        var i = scanned
        // Line by line with memchr rather than byte by byte. Each line's faults are found by
        // where a byte-by-byte scan would meet them, and the first is reported, so the answer
        // does not depend on how the bytes arrived.
        while i < count, let base = bytes.baseAddress {
            let lf = memchr(base + i, Int32(ByteClass.lf), count - i).map { UnsafeRawPointer($0) - base }
            // Where each fault would be met: past a limit, a CR not followed by LF, a bare LF.
            var fault: (at: Int, error: HTTPParseError)?
            func meet(_ at: Int, _ error: HTTPParseError) {
                if at < count && at < (fault?.at ?? Int.max) { fault = (at, error) }
            }
            if let requestLineEnd {
                meet(requestLineEnd + limits.maxHeaderBytes + 2, .headersTooLarge)
            } else {
                let over = requestLineStart + limits.maxRequestLineBytes + 1
                if over != lf { meet(max(over, i), .requestLineTooLong) }
            }
            // A CR left at the end of the last call is looked at again, now that more came.
            let crFrom = i > lineStart && bytes[i - 1] == ByteClass.cr ? i - 1 : i
            let crTo = (lf ?? count) - 1
            if crFrom < crTo, let cr = memchr(base + crFrom, Int32(ByteClass.cr), crTo - crFrom) {
                meet(UnsafeRawPointer(cr) - base + 1, .bareCarriageReturn)
            }
            if let lf, lf == lineStart || bytes[lf - 1] != ByteClass.cr { meet(lf, .bareLineFeed) }
            if let fault, fault.at <= (lf ?? count) { return .invalid(fault.error) }
            guard let lf else { break }
            let lineEnd = lf - 1
            if let requestLineEnd {
                if lineEnd == lineStart {
                    scanned = lf + 1
                    return build(bytes, requestLineEnd: requestLineEnd, headEnd: lf + 1)
                }
                headerCount += 1
                if headerCount > limits.maxHeaderCount { return .invalid(.tooManyHeaders) }
            } else if lineEnd == lineStart {
                // An empty line before the request line is ignored (RFC 9112 §2.2).
                requestLineStart = lf + 1
                if requestLineStart > limits.maxRequestLineBytes { return .invalid(.badRequestLine) }
            } else {
                requestLineEnd = lineEnd
            }
            lineStart = lf + 1
            i = lf + 1
        }
        scanned = count
        return .incomplete
    }

    private func build(_ bytes: UnsafeRawBufferPointer, requestLineEnd: Int, headEnd: Int) -> Outcome {
        let line = UnsafeRawBufferPointer(rebasing: bytes[requestLineStart..<requestLineEnd])
        let method: String, target: String, version: HTTPVersion
        switch Self.parseRequestLine(line) {
        case .success(let parts): (method, target, version) = parts
        case .failure(let error): return .invalid(error)
        }
        var fields: [(name: String, value: String)] = []
        fields.reserveCapacity(headerCount)
        var start = requestLineEnd + 2
        let end = headEnd - 2
        while start < end {
            // Every CR of a complete head ends a line (the scan refused bare CRs); a head without
            // one here is refused rather than trusted.
            guard let base = bytes.baseAddress, let cr = memchr(base + start, Int32(ByteClass.cr), end - start) else {
                return .invalid(.bareCarriageReturn)
            }
            let stop = UnsafeRawPointer(cr) - base
            switch Self.parseField(UnsafeRawBufferPointer(rebasing: bytes[start..<stop])) {
            case .success(let field): fields.append(field)
            case .failure(let error): return .invalid(error)
            }
            start = stop + 2
        }
        switch HTTPRequestHead.validated(
            method: method, target: target, version: version,
            headers: HTTPHeaders(fields))
        {
        case .success(let head): return .complete(head, consumed: headEnd)
        case .failure(let error): return .invalid(error)
        }
    }

    /// request-line = method SP request-target SP HTTP-version (RFC 9112 §3).
    static func parseRequestLine(
        _ line: UnsafeRawBufferPointer
    )
        -> Result<(String, String, HTTPVersion), HTTPParseError>
    {
        guard let firstSpace = line.firstIndex(of: ByteClass.sp), firstSpace > 0 else {
            return .failure(.badRequestLine)
        }
        let afterMethod = firstSpace + 1
        guard let secondRelative = line[afterMethod...].firstIndex(of: ByteClass.sp) else {
            return .failure(.badRequestLine)
        }
        let secondSpace = secondRelative
        for byte in line[..<firstSpace] where !ByteClass.isTchar(byte) { return .failure(.badRequestLine) }
        guard secondSpace > afterMethod else { return .failure(.badRequestLine) }
        for byte in line[afterMethod..<secondSpace] where byte < 0x21 || byte > 0x7E {
            return .failure(.badTarget)
        }
        let versionBytes = line[(secondSpace + 1)...]
        guard versionBytes.count == 8, versionBytes.starts(with: "HTTP/".utf8) else {
            return .failure(.badRequestLine)
        }
        let major = versionBytes[versionBytes.startIndex + 5]
        let dot = versionBytes[versionBytes.startIndex + 6]
        let minor = versionBytes[versionBytes.startIndex + 7]
        let digits = UInt8(ascii: "0")...UInt8(ascii: "9")
        guard digits.contains(major), dot == UInt8(ascii: "."), digits.contains(minor) else {
            return .failure(.badRequestLine)
        }
        let version: HTTPVersion
        switch (major, minor) {
        case (UInt8(ascii: "1"), UInt8(ascii: "1")): version = .http11
        case (UInt8(ascii: "1"), UInt8(ascii: "0")): version = .http10
        default: return .failure(.unsupportedVersion)
        }
        let method = String(decoding: line[..<firstSpace], as: UTF8.self)
        let target = String(decoding: line[afterMethod..<secondSpace], as: UTF8.self)
        guard isValidTarget(target, method: method) else { return .failure(.badTarget) }
        return .success((method, target, version))
    }

    /// origin-form, absolute-form (http/https) or `*` for OPTIONS (RFC 9112 §3.2).
    static func isValidTarget(_ target: String, method: String) -> Bool {
        if target.hasPrefix("/") { return !target.hasPrefix("//") }
        if target == "*" { return method == "OPTIONS" }
        let lower = target.lowercased()
        return lower.hasPrefix("http://") || lower.hasPrefix("https://")
    }

    /// field-line = field-name ":" OWS field-value OWS (RFC 9112 §5).
    static func parseField(_ line: UnsafeRawBufferPointer) -> Result<(name: String, value: String), HTTPParseError> {
        guard let first = line.first else { return .failure(.missingColon) }
        if ByteClass.isWhite(first) { return .failure(.obsFold) }
        guard let base = line.baseAddress, let found = memchr(base, Int32(UInt8(ascii: ":")), line.count) else {
            return .failure(.missingColon)
        }
        let colon = UnsafeRawPointer(found) - base
        guard colon > 0 else { return .failure(.badHeaderName) }
        if ByteClass.isWhite(line[colon - 1]) { return .failure(.spaceBeforeColon) }
        for byte in line[..<colon] where !ByteClass.isTchar(byte) { return .failure(.badHeaderName) }
        var valueStart = colon + 1
        var valueEnd = line.count
        while valueStart < valueEnd && ByteClass.isWhite(line[valueStart]) { valueStart += 1 }
        while valueEnd > valueStart && ByteClass.isWhite(line[valueEnd - 1]) { valueEnd -= 1 }
        guard ByteClass.allFieldValue(UnsafeRawBufferPointer(rebasing: line[valueStart..<valueEnd])) else {
            return .failure(.badHeaderValue)
        }
        return .success(
            (
                String(decoding: line[..<colon], as: UTF8.self),
                String(decoding: line[valueStart..<valueEnd], as: UTF8.self)
            ))
    }
}

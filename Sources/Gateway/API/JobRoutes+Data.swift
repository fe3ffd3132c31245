import HTTPServer
import TransferEngine
#if canImport(Glibc)
import Glibc
#endif

/// `GET /v1/jobs/{id}/data`: a completed download job's object from the spool, with `ETag`,
/// `If-None-Match`, and one byte range (`Range`, `If-Range`) as RFC 9110 §14 describes.
extension JobRoutes {
    func data(_ http: HTTPRequest, id: String) async throws -> HTTPResponse {
        let (job, _) = try await visibleJob(http, id: id)
        guard job.kind == .download else { throw APIError.notFound }
        guard job.state == .completed, let etag = job.etag else {
            throw APIError(.jobNotCompleted, "The download is \(job.state.rawValue); its data is served once it is completed.")
        }
        guard let file = try? spool.open(jobID: job.id, name: .download, create: false, truncate: false) else {
            throw APIError(.downloadExpired, "The prepared download has expired; create a new download job.")
        }
        let size = file.size
        var headers = HTTPHeaders([("ETag", etag), ("Accept-Ranges", "bytes"), ("Cache-Control", "private, no-cache")])
        if let known = http.headers["if-none-match"], Self.matches(known, etag) {
            return HTTPResponse(status: 304, headers: headers)
        }
        var range: ClosedRange<Int64>?
        if let header = http.headers["range"], http.headers["if-range"].map({ $0 == etag }) ?? true {
            switch Self.byteRange(header, size: size) {
            case .whole: break
            case .range(let r): range = r
            case .unsatisfiable:
                var refusal = Responses.problem(APIError(.rangeNotSatisfiable, "The range is outside the object's \(size) bytes."))
                refusal.headers.add("Content-Range", "bytes */\(size)")
                return refusal
            }
        }
        headers.add("Content-Type", "application/octet-stream")
        let start = range?.lowerBound ?? 0
        let length = range.map { $0.upperBound - $0.lowerBound + 1 } ?? size
        if let range { headers.add("Content-Range", "bytes \(range.lowerBound)-\(range.upperBound)/\(size)") }
        // The read buffer comes out of the memory budget; with no room soon, 503.
        let blockSize = 256 * 1024
        guard let held = try await settings.memory.reserve(Int64(blockSize), waitingAtMost: settings.roomWaitMilliseconds) else {
            throw APIError.noRoom()
        }
        return HTTPResponse(status: range == nil ? 200 : 206, headers: headers, body: .stream(length: Int(length)) { writer in
            defer { held.release() }
            var offset = start
            let end = start + length
            var buffer = [UInt8](repeating: 0, count: blockSize)
            while offset < end {
                let want = Int(min(Int64(buffer.count), end - offset))
                let got = buffer.withUnsafeMutableBytes { pread(file.fd, $0.baseAddress, want, off_t(offset)) }
                guard got > 0 else { throw SpoolError(errno: got == 0 ? EIO : errno, path: file.path) }
                try await writer.write(buffer[0..<got])
                offset += Int64(got)
            }
        })
    }

    enum ByteRange: Equatable {
        case whole
        case range(ClosedRange<Int64>)
        case unsatisfiable
    }

    /// One `bytes=` range of an object of `size` bytes. Several ranges, or a unit other than
    /// bytes, are answered with the whole object (allowed by RFC 9110 §14.2).
    static func byteRange(_ header: String, size: Int64) -> ByteRange {
        let value = header.trimmingCharacters(in: .whitespaces)
        guard value.lowercased().hasPrefix("bytes="), !value.contains(",") else { return .whole }
        let spec = value.dropFirst(6)
        guard let dash = spec.firstIndex(of: "-") else { return .whole }
        let first = spec[..<dash], last = spec[spec.index(after: dash)...]
        let number = { (text: Substring) in DecimalNumber.parse(text) }
        if first.isEmpty {
            guard let suffix = number(last) else { return .whole }
            guard suffix > 0, size > 0 else { return .unsatisfiable }
            return .range(max(0, size - suffix)...(size - 1))
        }
        guard let from = number(first) else { return .whole }
        guard from < size else { return .unsatisfiable }
        if last.isEmpty { return .range(from...(size - 1)) }
        guard let to = number(last), to >= from else { return .whole }
        return .range(from...min(to, size - 1))
    }

    /// `If-None-Match`: `*` or a list of entity tags, compared weakly (RFC 9110 §13.1.2).
    static func matches(_ header: String, _ etag: String) -> Bool {
        let bare = { (tag: Substring) -> Substring in tag.hasPrefix("W/") ? tag.dropFirst(2) : tag }
        return header.split(separator: ",").contains { item in
            let tag = item.trimmingCharacters(in: .whitespaces)
            return tag == "*" || bare(Substring(tag)) == bare(Substring(etag))
        }
    }
}

import Foundation

import Crypto
import Foundation
import HTTPServer
import TransferEngine

/// `GET /v1/jobs/{id}/data`: a download job's object, streamed from S3 by whichever instance
/// is asked: ranged reads run ahead of the client in parallel (their buffers drawn from the
/// memory budget), each pinned to the ETag the job recorded, so a changed object is 412
/// `source_changed`, never a mix of two versions. `ETag`, `If-None-Match`, one byte range
/// (`Range`, `If-Range`) as RFC 9110 §14 describes, the object's `Content-Type`, and
/// `Content-Disposition` when the job names a file. With a `dataUrl`'s `expires` and
/// `signature`, no `Authorization` header is needed.
extension JobRoutes {
    /// One read's size, and how many run ahead of the client.
    static let readAheadBlock: Int64 = 8 << 20
    static let readAheadDepth = 4
    /// Bytes handed to the connection at a time: a write that has not gone out after
    /// `stallMilliseconds` means the client is not reading, and the reads ahead are dropped.
    static let writeSlice = 256 * 1024
    static let stallMilliseconds = 1000

    func data(_ http: HTTPRequest, id: String) async throws -> HTTPResponse {
        let job = try await downloadJob(http, id: id)
        guard job.kind == .download else { throw APIError.notFound }
        guard job.state == .completed, let etag = job.etag, let size = job.bytesTotal, let source = job.source.object else {
            throw APIError(.jobNotCompleted, "The download is \(job.state.rawValue); its data is served once it is completed.")
        }
        if let completedAt = job.completedAt, Int64(context.settings.downloadTTL) * 1000 < Int64(context.now()) * 1000 - completedAt {
            throw APIError(.downloadExpired, "The download job has expired; create a new one.")
        }
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
        headers.add("Content-Type", source.contentType ?? "application/octet-stream")
        // The whole object's digest, on 200 and 206 alike, so a resumed download can be checked.
        if let checksum = job.checksum {
            headers.add("Repr-Digest", ChecksumFields.reprDigest(checksum))
        } else if let checksum = await ChecksumFields.lookup(jobs, key: source.key, etag: etag) {
            headers.add("Repr-Digest", ChecksumFields.reprDigest(checksum))
        }
        // Served from the gateway's own origin with the uploader's type: an HTML file opened
        // from a link must not run as a page of this origin, nor be sniffed into one.
        headers.add("X-Content-Type-Options", "nosniff")
        headers.add("Content-Security-Policy", "sandbox; default-src 'none'")
        if let filename = source.filename { headers.add("Content-Disposition", Self.attachment(filename)) }
        let start = range?.lowerBound ?? 0
        let length = range.map { $0.upperBound - $0.lowerBound + 1 } ?? size
        if let range { headers.add("Content-Range", "bytes \(range.lowerBound)-\(range.upperBound)/\(size)") }
        let status = range == nil ? 200 : 206
        if http.method == "HEAD" || length == 0 {
            return HTTPResponse(status: status, headers: headers, body: .stream(length: Int(length)) { _ in })
        }
        // Every stream counts against the job's owner, whoever holds the link.
        let slot = try await context.limits.admitStream(job.owner)
        // The read-ahead's blocks come out of the memory budget, the owner's share of it, one
        // at a time; with no room soon for the first, 503.
        let reads = ReadAhead(
            objects: jobs.objects, budget: context.engine.memory, owner: job.owner, key: source.key, etag: etag, from: start,
            length: length, block: Self.readAheadBlock, depth: Self.readAheadDepth)
        // The first block before the answer: a changed or vanished object is 412 while a status
        // can still say so.
        let first: ReadAhead.Block
        do {
            guard try await reads.begin(waitingAtMost: context.engine.roomWaitMilliseconds) else { throw APIError.noRoom() }
            guard let block = try await reads.next() else { throw APIError.sourceChanged }
            first = block
        } catch {
            reads.cancel()
            slot.release()
            throw Self.readFailure(error)
        }
        // A whole single-part object is checked against its MD5 ETag before its last byte goes.
        let check = range == nil ? MultipartETag.plainMD5(etag) : nil
        // Taken out by the stream, so the answer holds no second reference to its memory.
        let firstBlock = TakeOnce(first)
        return HTTPResponse(
            status: status, headers: headers,
            body: .stream(length: Int(length)) { writer in
                let watch = StallWatch(milliseconds: Self.stallMilliseconds) { reads.shrink() }
                defer {
                    watch.stop()
                    reads.cancel()
                    slot.release()
                }
                let digest = check.map { _ in Digest.Context(.md5) }
                guard var block = firstBlock.take() else { return }
                var done: Int64 = 0
                while true {
                    digest?.update(block.bytes)
                    done += Int64(block.bytes.count)
                    // The last block goes only if the whole object matches its MD5 ETag.
                    if done >= length, let check, let digest, digest.finish() != check {
                        throw TransferError(code: .checksumMismatch, retryable: false)
                    }
                    var offset = 0
                    while offset < block.bytes.count {
                        let slice = block.bytes[offset..<min(offset + Self.writeSlice, block.bytes.count)]
                        try await watch.write { try await writer.write(slice) }
                        offset += slice.count
                    }
                    // Its memory and budget go to the next read (or back to the budget); no reference stays here.
                    reads.recycle(consume block)
                    guard done < length, let following = try await reads.next() else { break }
                    block = following
                }
            })
    }

    /// The download job a request names: by its owner's (or an admin's) token, or by a valid
    /// `dataUrl` signature, which needs no token.
    private func downloadJob(_ http: HTTPRequest, id: String) async throws -> Job {
        let query = try QueryParameters.read(http)
        guard query["signature"] != nil || query["expires"] != nil else { return try await visibleJob(http, id: id).0 }
        guard let links, UUID(uuidString: id) != nil,
            links.valid(jobID: id.lowercased(), expires: query["expires"], signature: query["signature"])
        else {
            throw APIError(.forbidden, "The link is not valid or has expired; ask the job for a fresh dataUrl.")
        }
        guard let job = try await jobs.store.job(id: id.lowercased()) else { throw APIError.notFound }
        return job
    }

    static func readFailure(_ error: any Error) -> any Error {
        guard let error = error as? TransferError else { return error }
        if [.sourceChanged, .preconditionFailed, .notFound].contains(error.code) {
            return APIError.sourceChanged
        }
        return APIError(.storageError, "S3 did not serve the object (\(error.code)).")
    }

    /// `attachment` with the name twice: quoted ASCII for old clients, RFC 8187 UTF-8 for the rest.
    static func attachment(_ filename: String) -> String {
        let ascii = String(
            filename.unicodeScalars.map { scalar -> Character in
                scalar.value >= 0x20 && scalar.value < 0x7F && scalar != "\"" && scalar != "\\" ? Character(scalar) : "_"
            })
        var encoded = ""
        for byte in filename.utf8 {
            let unreserved =
                (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A)
                || "!#$&+-.^_`|~".utf8.contains(byte)
            encoded += unreserved ? String(UnicodeScalar(byte)) : String(format: "%%%02X", byte)
        }
        return "attachment; filename=\"\(ascii)\"; filename*=UTF-8''\(encoded)"
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

import Foundation
import S3
import TransferEngine

/// The engine's `SourceFetcher` port over the guarded URL fetcher: what an `import` job reads.
/// Failures become `TransferError`s: a refused address or a 4xx is final, a 5xx, 429 or a
/// broken connection may be retried.
public struct HTTPSourceFetcher: SourceFetcher {
    let fetcher: URLFetcher

    public init(fetcher: URLFetcher) {
        self.fetcher = fetcher
    }

    /// A GET of the first byte: a 206 says the source serves ranges and (in `Content-Range`)
    /// its size; a whole answer says it does not. A GET, not a HEAD, because presigned URLs
    /// (the usual import source) are signed for GET only.
    public func probe(_ url: String) async throws -> SourceProbe {
        let response: URLFetcher.Response
        do {
            response = try await mapped {
                try await fetcher.send("GET", url: url, headers: [("Range", "bytes=0-0")], sink: .memory(limit: 64))
            }
        } catch let error as TransferError where error.code == .responseTooLarge {
            return SourceProbe(size: nil, etag: nil, acceptsRanges: false)  // the whole body came back: no ranges
        }
        let etag = response.header("etag").flatMap { $0.hasPrefix("W/") ? nil : $0 }
        switch response.status {
        case 206:
            let total = response.header("content-range")?.split(separator: "/").last.flatMap {
                Int64($0.trimmingCharacters(in: .whitespaces))
            }
            return SourceProbe(size: total, etag: etag, acceptsRanges: total != nil)
        case 416:
            return SourceProbe(size: nil, etag: nil, acceptsRanges: false)  // an empty body: read it whole
        default:
            try Self.check(response.status, expected: 200...299)
            return SourceProbe(size: nil, etag: etag, acceptsRanges: false)
        }
    }

    @discardableResult
    public func fetch(_ url: String, range: ClosedRange<Int64>, ifMatch: String?, into file: SpoolFile) async throws -> UInt32? {
        defer { withExtendedLifetime(file) {} }
        var headers = [("Range", "bytes=\(range.lowerBound)-\(range.upperBound)")]
        if let ifMatch { headers.append(("If-Match", ifMatch)) }
        let response = try await mapped {
            try await fetcher.send("GET", url: url, headers: headers, sink: .file(fd: file.fd, offset: 0, summing: true))
        }
        if response.status == 412 { throw TransferError.sourceChanged }
        if response.status == 200 { throw TransferError(code: .rangeIgnored, retryable: false) }
        try Self.check(response.status, expected: 206...206)
        guard let contentRange = response.header("content-range"),
            contentRange.hasPrefix("bytes \(range.lowerBound)-\(range.upperBound)/")
        else {
            throw TransferError.sourceChanged
        }
        return response.crc32c
    }

    public func stream(_ url: String, limit: Int64) async throws -> any ByteSource {
        let response = try await mapped { try await fetcher.stream(url, limit: limit) }
        try Self.check(response.status, expected: 200...299)
        return StreamedBody(body: response.body)
    }

    static func check(_ status: Int, expected: ClosedRange<Int>) throws {
        guard !expected.contains(status) else { return }
        let retryable = status == 429 || status >= 500
        throw TransferError(code: .sourceHTTPError, retryable: retryable, status: status)
    }

    private func mapped<T>(_ work: () async throws -> T) async throws -> T {
        do {
            return try await work()
        } catch let error as URLFetcher.FetchError {
            switch error {
            case .refused(.forbidden): throw TransferError(code: .forbiddenAddress, retryable: false)
            case .refused(.unresolvable): throw TransferError(code: .unresolvableHost, retryable: false)
            case .badURL: throw TransferError(code: .invalidURL, retryable: false)
            case .tooManyRedirects: throw TransferError(code: .tooManyRedirects, retryable: false)
            }
        } catch let error as S3Error {
            if error.code == "ResponseTooLarge" { throw TransferError(code: .responseTooLarge, retryable: false) }
            throw TransferError(code: .sourceUnreachable, retryable: error.retryable)
        } catch is BodyStream.TooLarge {
            throw TransferError(code: .entityTooLarge, retryable: false)
        }
    }
}

/// A source's body as the engine reads it: transport failures become `TransferError`s.
/// Dropped by its reader (a job that ended, failed or gave its slot back mid-body), it stops
/// the transfer: the source's connection closes at once instead of staying paused.
final class StreamedBody: ByteSource {
    let body: BodyStream

    init(body: BodyStream) { self.body = body }

    deinit { body.cancel() }

    func next() async throws -> ArraySlice<UInt8>? {
        do {
            return try await body.next()
        } catch is BodyStream.TooLarge {
            throw TransferError(code: .entityTooLarge, retryable: false)
        } catch let error as S3Error {
            if error.kind == .cancelled { throw CancellationError() }
            throw TransferError(code: .sourceUnreachable, retryable: error.retryable)
        }
    }

    func giveBack(_ chunk: consuming ArraySlice<UInt8>) { body.giveBack(chunk) }
}

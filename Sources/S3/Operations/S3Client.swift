import Crypto
import Foundation
import SigV4
import Striped

/// The S3 operations the gateway uses, signed with SigV4 (header signing, unsigned payload for
/// data, hashed payload for XML) and run on the curl engine. Every failure is an `S3Error`
/// with S3's code and a verdict on whether retrying can help.
public final class S3Client: Sendable {
    public let endpoint: S3Endpoint
    /// The credentials in use and the signer made from them for `endpoint`, one instance per
    /// thread's stripe (so threads do not share one reference count): temporary credentials
    /// are replaced while requests sign, and reading them must stay as cheap as reading a
    /// constant (presigning asks on every request).
    private let signing: Striped<SigningState>
    let engine: CurlEngine
    /// Sends PUTs of a file's bytes by `sendfile` where the endpoint allows (plain HTTP, no proxy).
    let fileSender: FileSender?
    let options: CurlOptions
    private let now: @Sendable () -> Int
    let keyCache = SigningKeyCache()
    /// `endpoint.hostHeader`, worked out once.
    let ownHostHeader: String

    /// Credentials and the signer for `endpoint` made from them once: presigning needs nothing
    /// else per URL. A class, so a reader takes one reference, not a copy of every string.
    final class SigningState: Sendable {
        let credentials: Credentials
        let signer: Signer

        init(credentials: Credentials, signer: Signer) {
            self.credentials = credentials
            self.signer = signer
        }
    }

    public init(
        endpoint: S3Endpoint, credentials: Credentials, options: CurlOptions = CurlOptions(),
        now: @escaping @Sendable () -> Int
    ) {
        self.endpoint = endpoint
        self.ownHostHeader = endpoint.hostHeader
        let keyCache = self.keyCache
        self.signing = Striped(count: 8) {
            SigningState(credentials: credentials, signer: Signer(credentials: credentials, region: endpoint.region, keyCache: keyCache))
        }
        self.options = options
        self.engine = CurlEngine(options: options)
        self.fileSender = FileSender(endpoint: endpoint, options: options, environment: ProcessInfo.processInfo.environment)
        self.now = now
    }

    // MARK: objects

    /// HeadBucket; returns the status (200 when the bucket answers our signed request).
    public func headBucket(timeout: Double) async throws -> Int {
        try await withTimeout(timeout) {
            try await self.send("HEAD", key: nil, expecting: nil).status
        }
    }

    /// PutObject. `checksumCRC32C` (base64, `x-amz-checksum-crc32c`) or `contentMD5` makes S3
    /// refuse a body that changed on the way.
    public func putObject(
        key: String, body: RequestBodySource, attributes: ObjectAttributes = ObjectAttributes(),
        contentMD5: String? = nil, checksumCRC32C: String? = nil, conditions: [(String, String)] = []
    ) async throws -> String {
        var headers = attributes.headers + conditions
        if let contentMD5 { headers.append(("Content-MD5", contentMD5)) }
        if let checksumCRC32C { headers.append(("x-amz-checksum-crc32c", checksumCRC32C)) }
        let response = try await send("PUT", key: key, headers: headers, body: body)
        return try etag(of: response)
    }

    /// GetObject into `sink`, optionally a byte range (inclusive, RFC 9110 §14.1.2).
    /// With a range, only 206 is success (a 200 would be the whole object landing where one
    /// range should); `ifMatch` pins the object version across several ranged GETs.
    public func getObject(
        key: String, range: ClosedRange<Int64>? = nil, ifMatch: String? = nil,
        sink: ResponseBodySink = .memory(limit: 64 << 20)
    ) async throws -> (headers: [(String, String)], body: [UInt8]) {
        var headers: [(String, String)] = []
        if let range { headers.append(("Range", "bytes=\(range.lowerBound)-\(range.upperBound)")) }
        if let ifMatch { headers.append(("If-Match", ifMatch)) }
        let response = try await send("GET", key: key, headers: headers, sink: sink, expecting: range == nil ? 200..<300 : 206..<207)
        return (response.headers, response.body)
    }

    /// HeadObject; with `checksumMode`, S3 also answers the checksum it keeps for the object
    /// (`x-amz-checksum-mode: ENABLED`; on AWS, an SSE-KMS object's needs `kms:Decrypt`).
    public func headObject(key: String, checksumMode: Bool = false) async throws -> ObjectHead {
        let response = try await send("HEAD", key: key, headers: checksumMode ? [("x-amz-checksum-mode", "ENABLED")] : [])
        var metadata: [String: String] = [:]
        for (name, value) in response.headers where name.lowercased().hasPrefix("x-amz-meta-") {
            metadata[String(name.lowercased().dropFirst("x-amz-meta-".count))] = value
        }
        return ObjectHead(
            size: Int64(response.header("content-length") ?? "") ?? 0, etag: Self.quoted(response.header("etag") ?? ""),
            contentType: response.header("content-type"), lastModified: response.header("last-modified"),
            metadata: metadata, cacheControl: response.header("cache-control"),
            contentDisposition: response.header("content-disposition"),
            serverSideEncryption: response.header("x-amz-server-side-encryption"),
            kmsKeyId: response.header("x-amz-server-side-encryption-aws-kms-key-id"),
            checksumCRC32C: response.header("x-amz-checksum-crc32c"), checksumSHA256: response.header("x-amz-checksum-sha256"),
            checksumType: response.header("x-amz-checksum-type"))
    }

    /// DeleteObject; with `ifMatch`, only while the object has that ETag (412 otherwise).
    public func deleteObject(key: String, ifMatch: String? = nil) async throws {
        _ = try await send("DELETE", key: key, headers: ifMatch.map { [("If-Match", $0)] } ?? [])
    }

    /// CopyObject within the bucket (up to 5 GiB; larger copies use UploadPartCopy), pinned to
    /// the source's ETag with `x-amz-copy-source-if-match` when `ifMatch` is given (a source
    /// replaced meanwhile answers 412 `PreconditionFailed`). Without `attributes` the copy keeps
    /// the source's (S3's `COPY` directive); with them, they replace the source's.
    public func copyObject(
        from sourceKey: String, to key: String, attributes: ObjectAttributes? = nil,
        ifMatch: String? = nil, conditions: [(String, String)] = []
    ) async throws -> String {
        var headers = [("x-amz-copy-source", copySource(sourceKey))] + conditions
        if let ifMatch { headers.append(("x-amz-copy-source-if-match", ifMatch)) }
        if let attributes {
            headers.append(("x-amz-metadata-directive", "REPLACE"))
            headers += attributes.headers
        }
        let response = try await send("PUT", key: key, headers: headers)
        return try xmlETag(response, root: "CopyObjectResult")
    }

    /// PutBucketCors: `xml` is the whole `CORSConfiguration` (S3 requires its Content-MD5).
    public func putBucketCors(xml: String) async throws {
        let body = Array(xml.utf8)
        _ = try await send(
            "PUT", key: nil, query: [("cors", "")],
            headers: [("Content-Type", "application/xml"), ("Content-MD5", Self.contentMD5(body))], body: .bytes(body))
    }

    // MARK: multipart

    /// CreateMultipartUpload. With `checksumAlgorithm` ("CRC32C") every part must carry that
    /// checksum and the completion lists each part's (AWS refuses either missing).
    public func createMultipartUpload(
        key: String, attributes: ObjectAttributes = ObjectAttributes(),
        checksumAlgorithm: String? = nil
    ) async throws -> String {
        var headers = attributes.headers
        if let checksumAlgorithm { headers.append(("x-amz-checksum-algorithm", checksumAlgorithm)) }
        let response = try await send("POST", key: key, query: [("uploads", "")], headers: headers)
        let tree = try parse(response)
        guard let uploadId = tree.text("UploadId"), !uploadId.isEmpty else { throw protocolError("no UploadId") }
        return uploadId
    }

    public func uploadPart(
        key: String, uploadId: String, partNumber: Int, body: RequestBodySource,
        contentMD5: String? = nil, checksumCRC32C: String? = nil
    ) async throws -> String {
        var headers: [(String, String)] = []
        if let contentMD5 { headers.append(("Content-MD5", contentMD5)) }
        if let checksumCRC32C { headers.append(("x-amz-checksum-crc32c", checksumCRC32C)) }
        let response = try await send(
            "PUT", key: key, query: [("partNumber", String(partNumber)), ("uploadId", uploadId)],
            headers: headers, body: body)
        return try etag(of: response)
    }

    /// UploadPartCopy: a part of `key`'s upload copied from `sourceKey`, optionally a byte range.
    public func uploadPartCopy(
        key: String, uploadId: String, partNumber: Int, sourceKey: String,
        range: ClosedRange<Int64>? = nil, ifMatch: String? = nil
    ) async throws -> String {
        var headers = [("x-amz-copy-source", copySource(sourceKey))]
        if let ifMatch { headers.append(("x-amz-copy-source-if-match", ifMatch)) }
        if let range { headers.append(("x-amz-copy-source-range", "bytes=\(range.lowerBound)-\(range.upperBound)")) }
        let response = try await send(
            "PUT", key: key, query: [("partNumber", String(partNumber)), ("uploadId", uploadId)],
            headers: headers)
        return try xmlETag(response, root: "CopyPartResult")
    }

    /// Every part S3 holds, following `NextPartNumberMarker` across pages.
    public func listParts(key: String, uploadId: String, pageSize: Int = 1000) async throws -> [UploadedPart] {
        var parts: [UploadedPart] = []
        var marker: String?
        repeat {
            var query = [("uploadId", uploadId), ("max-parts", String(pageSize))]
            if let marker { query.append(("part-number-marker", marker)) }
            let tree = try parse(try await send("GET", key: key, query: query))
            for part in tree.all("Part") {
                // S3's own limits, checked here: a number or size past them (a broken or hostile
                // server) is not an answer we can use, and sums of such sizes would overflow.
                guard let number = Int(part.text("PartNumber") ?? ""), (1...10_000).contains(number),
                    let size = Int64(part.text("Size") ?? ""), (0...(5 << 30)).contains(size),
                    let etag = part.text("ETag")
                else {
                    throw protocolError("a part in ListParts is outside S3's limits")
                }
                parts.append(
                    UploadedPart(
                        partNumber: number, etag: Self.quoted(etag), size: size,
                        lastModified: part.text("LastModified"), checksumCRC32C: part.text("ChecksumCRC32C")))
            }
            let next = tree.text("IsTruncated") == "true" ? tree.text("NextPartNumberMarker") : nil
            // A server that repeats its marker would loop us forever.
            marker = next != nil && next != marker && !tree.all("Part").isEmpty ? next : nil
        } while marker != nil
        // One part per number: SeaweedFS lists a part sent twice under one number twice; the
        // later listing is the part that counts.
        var latest: [Int: UploadedPart] = [:]
        for part in parts { latest[part.partNumber] = part }
        return latest.values.sorted { $0.partNumber < $1.partNumber }
    }

    /// Completes the upload. S3 may answer 200 and still fail, with `<Error>` in the body
    /// (AWS S3 API Reference, CompleteMultipartUpload): that is an error here too.
    /// `checksums` holds the CRC-32C of each part by number, for an upload created with that
    /// algorithm.
    public func completeMultipartUpload(
        key: String, uploadId: String, parts: [(partNumber: Int, etag: String)],
        checksums: [Int: String] = [:], conditions: [(String, String)] = []
    ) async throws -> String {
        var xml = "<CompleteMultipartUpload xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
        for part in parts.sorted(by: { $0.partNumber < $1.partNumber }) {
            xml += "<Part><PartNumber>\(part.partNumber)</PartNumber><ETag>\(xmlEscape(part.etag))</ETag>"
            if let checksum = checksums[part.partNumber] { xml += "<ChecksumCRC32C>\(xmlEscape(checksum))</ChecksumCRC32C>" }
            xml += "</Part>"
        }
        xml += "</CompleteMultipartUpload>"
        let response = try await send(
            "POST", key: key, query: [("uploadId", uploadId)],
            headers: [("Content-Type", "application/xml")] + conditions, body: .bytes(Array(xml.utf8)))
        return try Self.completionETag(status: response.status, body: response.body)
    }

    /// The ETag of a completed upload, or the error S3 reported — also when it answered 200
    /// with `<Error>` in the body, which it may do after a long completion.
    static func completionETag(status: Int, body: [UInt8]) throws -> String {
        guard let tree = try? XMLTree.parse(body) else {
            throw S3Error(kind: .protocolViolation, status: status, code: "BadResponse", message: "unreadable XML")
        }
        if tree.name == "Error" { throw S3Error.fromResponse(status: status, body: body) }
        guard tree.name == "CompleteMultipartUploadResult", let etag = tree.text("ETag"), !etag.isEmpty else {
            throw S3Error(kind: .protocolViolation, status: status, code: "BadResponse", message: "no ETag in the completion")
        }
        return quoted(etag)
    }

    public func abortMultipartUpload(key: String, uploadId: String) async throws {
        _ = try await send("DELETE", key: key, query: [("uploadId", uploadId)])
    }

    /// Aborts, taking an upload S3 no longer has (aborted or completed by someone else) as
    /// already done.
    public func abortIfOpen(key: String, uploadId: String) async throws {
        do {
            try await abortMultipartUpload(key: key, uploadId: uploadId)
        } catch let error as S3Error where error.code == "NoSuchUpload" {
            return
        }
    }

    // MARK: plumbing

    /// The credentials requests are signed with now (for POST policies signed elsewhere).
    public var signingCredentials: Credentials { signing.withLocalLock { $0.credentials } }

    /// When the current temporary credentials end (seconds since 1970), read without copying
    /// the rest of them: presigning asks on every request.
    public var credentialsExpiration: Int? { signing.withLocalLock { $0.credentials.expiration } }

    /// The signer for `endpoint` with the current credentials.
    var ownSigner: Signer { signing.withLocalLock { $0.signer } }

    /// Signs every request from now on with `credentials` (temporary credentials refreshed).
    /// Requests already signed keep the credentials they were signed with.
    public func useCredentials(_ credentials: Credentials) {
        for stripe in signing.stripes {
            let state = SigningState(
                credentials: credentials, signer: Signer(credentials: credentials, region: endpoint.region, keyCache: keyCache))
            stripe.lock.withLock { $0 = state }
        }
    }
    func currentTime() -> Int { now() }

    /// Signs and sends one request; a status outside 2xx (or `expecting`) becomes an `S3Error`.
    func send(
        _ method: String, key: String?, query: [(String, String)] = [], headers: [(String, String)] = [],
        body: RequestBodySource = .none, sink: ResponseBodySink = .memory(limit: 16 << 20),
        expecting: Range<Int>? = 200..<300
    ) async throws -> CurlTransfer.Response {
        let path = endpoint.encodedPath(key: key)
        let payloadHash: String
        switch body {
        case .bytes(let bytes) where bytes.count <= 1 << 20: payloadHash = Digest.hex(Digest.sha256(bytes))
        case .none: payloadHash = Signer.emptyPayloadHash
        default: payloadHash = Signer.unsignedPayload
        }
        let signer = ownSigner
        var toSign = [("Host", endpoint.hostHeader)] + headers
        if case .bytes = body, !headers.contains(where: { $0.0.lowercased() == "content-type" }) {
            toSign.append(("Content-Type", "application/octet-stream"))
        }
        let added = signer.signedHeaders(
            method: method, encodedPath: path, query: query, headers: toSign,
            payloadHash: payloadHash, time: SigningTime(secondsSince1970: now()))
        let target = path + (query.isEmpty ? "" : "?" + URIEncoding.query(query))
        let response: CurlTransfer.Response
        if method == "PUT", case .file(let fd, let offset, let length) = body, let fileSender,
            let sent = try await fileSender.perform(
                target: target, headers: Array(toSign.dropFirst()) + added, fd: fd, offset: offset, length: length)
        {
            response = sent
        } else {
            guard
                let transfer = CurlTransfer(
                    method: method, url: endpoint.url(encodedPath: target), headers: Array(toSign.dropFirst()) + added,
                    source: body, sink: sink, options: options)
            else {
                throw S3Error(
                    kind: .protocolViolation, status: 0, code: "InvalidHeader",
                    message: "a header name or value cannot be sent (control or non-ASCII character, or empty)")
            }
            response = try await engine.perform(transfer)
        }
        if let expecting, !expecting.contains(response.status) {
            throw S3Error.fromResponse(status: response.status, body: response.body)
        }
        return response
    }

    private func copySource(_ sourceKey: String) -> String {
        "/" + endpoint.bucket + "/" + URIEncoding.encode(sourceKey, encodeSlash: false)
    }

    func parse(_ response: CurlTransfer.Response) throws -> XMLTree {
        guard let tree = try? XMLTree.parse(response.body) else { throw protocolError("unreadable XML") }
        if tree.name == "Error" { throw S3Error.fromResponse(status: response.status, body: response.body) }
        return tree
    }

    private func xmlETag(_ response: CurlTransfer.Response, root: String) throws -> String {
        let tree = try parse(response)
        guard tree.name == root, let etag = tree.text("ETag"), !etag.isEmpty else { throw protocolError("no ETag in \(root)") }
        return Self.quoted(etag)
    }

    private func etag(of response: CurlTransfer.Response) throws -> String {
        guard let etag = response.header("etag") else { throw protocolError("no ETag header") }
        return Self.quoted(etag)
    }

    /// ETags in their quoted HTTP form (RFC 9110 §8.8.3): AWS quotes them everywhere, SeaweedFS
    /// leaves them bare in some XML answers; callers compare them, so they get one spelling.
    static func quoted(_ etag: String) -> String {
        if etag.hasPrefix("\"") || etag.hasPrefix("W/\"") { return etag }
        return "\"" + etag + "\""
    }

    func protocolError(_ message: String) -> S3Error {
        S3Error(kind: .protocolViolation, status: 0, code: "BadResponse", message: message)
    }

    private func withTimeout<T: Sendable>(_ seconds: Double, _ work: @escaping @Sendable () async throws -> T) async throws -> T {
        try await withThrowingTaskGroup(of: T.self) { group in
            group.addTask { try await work() }
            group.addTask {
                try await Task.sleep(for: .milliseconds(Int(seconds * 1000)))
                throw S3Error(kind: .transport, status: 0, code: "Timeout", message: "no answer in \(seconds) s")
            }
            defer { group.cancelAll() }
            guard let first = try await group.next() else { throw S3Error.cancelled }
            return first
        }
    }

    /// Base64 of the MD5 of `bytes`, for `Content-MD5`.
    public static func contentMD5(_ bytes: [UInt8]) -> String {
        Data(Digest.md5(bytes)).base64EncodedString()
    }
}

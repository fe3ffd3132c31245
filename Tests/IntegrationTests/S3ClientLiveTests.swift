import Crypto
import Foundation
import SigV4
import Testing

@testable import Adapters
@testable import S3
@testable import TransferGateway

#if canImport(Glibc)
    import Glibc
#endif

/// Every S3 operation the gateway uses, against the SeaweedFS started by scripts/stack.sh.
/// Switched on by GATEWAY_LIVE_TESTS=1 (scripts/test.sh sets it).
let environment = ProcessInfo.processInfo.environment
let live = environment["GATEWAY_LIVE_TESTS"] == "1"

func liveClient(secret: String? = nil) throws -> S3Client {
    let endpoint = try S3Endpoint.parse(
        url: environment["GATEWAY_S3_ENDPOINT"], bucket: environment["GATEWAY_S3_BUCKET"] ?? "",
        region: environment["GATEWAY_S3_REGION"] ?? "us-east-1", pathStyle: nil, accelerate: false)
    let credentials = Credentials(
        accessKeyID: environment["GATEWAY_S3_ACCESS_KEY_ID"] ?? "",
        secretAccessKey: secret ?? environment["GATEWAY_S3_SECRET_ACCESS_KEY"] ?? "")
    return S3Client(endpoint: endpoint, credentials: credentials, now: { Int(Date().timeIntervalSince1970) })
}

func uniqueKey(_ name: String) -> String { "tests/s3/\(UUID().uuidString)/\(name)" }

/// Deterministic pseudo-random bytes (xorshift), fast enough for a GiB.
func pattern(_ count: Int, seed: UInt64) -> [UInt8] {
    var out = [UInt8](repeating: 0, count: count)
    var x = seed | 1
    out.withUnsafeMutableBytes { raw in
        let words = raw.bindMemory(to: UInt64.self)
        for i in 0..<words.count {
            x ^= x << 13; x ^= x >> 7; x ^= x << 17
            words[i] = x
        }
    }
    return out
}

/// Runs curl and returns the HTTP status (the presigned URL tests use a real outside client).
func curlStatus(_ arguments: [String]) throws -> Int {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/curl")
    process.arguments = ["-s", "-o", "/dev/null", "-w", "%{http_code}"] + arguments
    let pipe = Pipe()
    process.standardOutput = pipe
    try process.run()
    process.waitUntilExit()
    return Int(String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)) ?? -1
}

@Suite(.enabled(if: live, "set GATEWAY_LIVE_TESTS=1 (scripts/test.sh does)"), .serialized)
struct S3ClientLiveTests {
    @Test(arguments: [
        "plain.txt", "with space.txt", "plus+and%percent~tilde.bin", "ünïcödé/日本語.txt", "a/b/c/deep.txt", "quote'and(paren).txt",
    ])
    func putGetHeadDeleteRoundTrip(name: String) async throws {
        let client = try liveClient()
        let key = uniqueKey(name)
        let body = pattern(1000, seed: 7)
        let attributes = ObjectAttributes(contentType: "text/plain", cacheControl: "max-age=60", metadata: ["owner": "alice"])
        let etag = try await client.putObject(
            key: key, body: .bytes(body), attributes: attributes,
            contentMD5: S3Client.contentMD5(body))
        #expect(etag == "\"\(Digest.hex(Digest.md5(body)))\"")
        let head = try await client.headObject(key: key)
        #expect(head.size == 1000 && head.etag == etag && head.contentType == "text/plain")
        #expect(head.metadata["owner"] == "alice")
        let got = try await client.getObject(key: key)
        #expect(got.body == body)
        let range = try await client.getObject(key: key, range: 10...19)
        #expect(range.body == Array(body[10...19]))
        try await client.deleteObject(key: key)
        await #expect(throws: S3Error.self) { _ = try await client.headObject(key: key) }
    }

    @Test func missingObjectIsNoSuchKeyAndNotRetryable() async throws {
        let client = try liveClient()
        do {
            _ = try await client.getObject(key: uniqueKey("missing"))
            Issue.record("a missing key was found")
        } catch let error as S3Error {
            #expect(error.code == "NoSuchKey" && error.status == 404 && !error.retryable)
        }
    }

    @Test func wrongContentMD5IsRefused() async throws {
        let client = try liveClient()
        do {
            _ = try await client.putObject(
                key: uniqueKey("md5"), body: .bytes(pattern(100, seed: 1)),
                contentMD5: S3Client.contentMD5([1, 2, 3]))
            Issue.record("a wrong Content-MD5 was accepted")
        } catch let error as S3Error {
            #expect(error.kind == .service && (error.code == "BadDigest" || error.code == "InvalidDigest"), "\(error)")
        }
    }

    @Test func aWrongCRC32CIsRefusedAndTheRightOneTaken() async throws {
        let client = try liveClient()
        let body = pattern(100, seed: 1)
        let right = Digest.crc32cBase64(body.withUnsafeBytes { Digest.crc32c($0) })
        do {
            _ = try await client.putObject(
                key: uniqueKey("crc"), body: .bytes(body),
                checksumCRC32C: Digest.crc32cBase64([1, 2, 3].withUnsafeBytes { Digest.crc32c($0) }))
            Issue.record("a wrong x-amz-checksum-crc32c was accepted")
        } catch let error as S3Error {
            #expect(error.kind == .service && (error.code == "BadDigest" || error.code == "InvalidRequest"), "\(error)")
        }
        let key = uniqueKey("crc")
        let etag = try await client.putObject(key: key, body: .bytes(body), checksumCRC32C: right)
        #expect(etag == "\"\(Digest.hex(Digest.md5(body)))\"")
        try await client.deleteObject(key: key)
    }

    /// An upload created with CRC32C: a part whose checksum is wrong is refused, and the
    /// completion lists each part's.
    @Test func aCRC32CMultipartUploadChecksEveryPart() async throws {
        let client = try liveClient()
        let key = uniqueKey("crc-multipart")
        let uploadId = try await client.createMultipartUpload(key: key, checksumAlgorithm: "CRC32C")
        let parts = [pattern(5 << 20, seed: 2), pattern(1000, seed: 3)]
        let checksums = parts.map { part in Digest.crc32cBase64(part.withUnsafeBytes { Digest.crc32c($0) }) }
        do {
            _ = try await client.uploadPart(
                key: key, uploadId: uploadId, partNumber: 1, body: .bytes(parts[0]), checksumCRC32C: checksums[1])
            Issue.record("a part with another part's checksum was accepted")
        } catch let error as S3Error {
            #expect(error.kind == .service && error.code == "BadDigest", "\(error)")
        }
        var etags: [(partNumber: Int, etag: String)] = []
        for (index, part) in parts.enumerated() {
            let etag = try await client.uploadPart(
                key: key, uploadId: uploadId, partNumber: index + 1, body: .bytes(part),
                checksumCRC32C: checksums[index])
            etags.append((index + 1, etag))
        }
        _ = try await client.completeMultipartUpload(
            key: key, uploadId: uploadId, parts: etags,
            checksums: [1: checksums[0], 2: checksums[1]])
        #expect(try await client.getObject(key: key).body == parts[0] + parts[1])
        try await client.deleteObject(key: key)
    }

    @Test func wrongSecretIsSignatureDoesNotMatch() async throws {
        let client = try liveClient(secret: "not-the-secret")
        do {
            _ = try await client.putObject(key: uniqueKey("auth"), body: .bytes([1]))
            Issue.record("a wrong secret was accepted")
        } catch let error as S3Error {
            #expect(error.status == 403 && !error.retryable, "\(error)")
        }
    }

    @Test func headerInjectionIsRefusedBeforeAnythingIsSent() async throws {
        let client = try liveClient()
        let key = uniqueKey("inject.txt")
        do {
            _ = try await client.putObject(
                key: key, body: .bytes([1]),
                attributes: ObjectAttributes(contentDisposition: "a\r\nx-amz-acl: public-read"))
            Issue.record("a CRLF in a header value was sent")
        } catch let error as S3Error {
            #expect(error.code == "InvalidHeader" && !error.retryable)
        }
        await #expect(throws: S3Error.self) { _ = try await client.headObject(key: key) }
    }

    @Test func copyObjectKeepsOrReplacesAttributes() async throws {
        let client = try liveClient()
        let source = uniqueKey("copy source.bin")
        let body = pattern(4096, seed: 3)
        _ = try await client.putObject(key: source, body: .bytes(body), attributes: ObjectAttributes(contentType: "application/x-a"))
        let destination = uniqueKey("copy dest.bin")
        _ = try await client.copyObject(from: source, to: destination, attributes: ObjectAttributes(contentType: "application/x-b"))
        #expect(try await client.getObject(key: destination).body == body)
        #expect(try await client.headObject(key: destination).contentType == "application/x-b")
    }

    @Test func multipartLifecycleWithListingsCopyAndAbort() async throws {
        let client = try liveClient()
        let key = uniqueKey("multi part.bin")
        let part = 5 * 1024 * 1024
        let data = pattern(2 * part + 1234, seed: 11)
        let uploadId = try await client.createMultipartUpload(key: key, attributes: ObjectAttributes(contentType: "application/x-test"))
        #expect(try await client.listMultipartUploads(prefix: key).contains { $0.uploadId == uploadId })
        var etags: [(partNumber: Int, etag: String)] = []
        for i in 0..<3 {
            let slice = Array(data[(i * part)..<min(data.count, (i + 1) * part)])
            etags.append(
                (
                    i + 1,
                    try await client.uploadPart(
                        key: key, uploadId: uploadId, partNumber: i + 1, body: .bytes(slice),
                        contentMD5: S3Client.contentMD5(slice))
                ))
        }
        let listed = try await client.listParts(key: key, uploadId: uploadId, pageSize: 2)  // two pages
        #expect(listed.map(\.partNumber) == [1, 2, 3])
        #expect(listed.map(\.size) == [Int64(part), Int64(part), 1234])
        #expect(listed.map(\.etag) == etags.map(\.etag))
        // A completion naming a part S3 does not have fails, though S3 may answer 200.
        await #expect(throws: S3Error.self) {
            _ = try await client.completeMultipartUpload(
                key: key, uploadId: uploadId,
                parts: etags + [(partNumber: 4, etag: "\"00000000000000000000000000000000\"")])
        }
        let etag = try await client.completeMultipartUpload(key: key, uploadId: uploadId, parts: etags)
        #expect(etag.hasSuffix("-3\""))
        #expect(try await client.headObject(key: key).size == Int64(data.count))
        #expect(!(try await client.listMultipartUploads(prefix: key).contains { $0.uploadId == uploadId }))

        // UploadPartCopy with source ranges rebuilds the object from two halves.
        let copyKey = uniqueKey("copied.bin")
        let copyId = try await client.createMultipartUpload(key: copyKey)
        let first = try await client.uploadPartCopy(
            key: copyKey, uploadId: copyId, partNumber: 1, sourceKey: key,
            range: 0...Int64(part - 1))
        let second = try await client.uploadPartCopy(
            key: copyKey, uploadId: copyId, partNumber: 2, sourceKey: key,
            range: Int64(part)...Int64(data.count - 1))
        _ = try await client.completeMultipartUpload(key: copyKey, uploadId: copyId, parts: [(1, first), (2, second)])
        #expect(Digest.sha256(try await client.getObject(key: copyKey).body) == Digest.sha256(data))

        // Abort leaves nothing behind.
        let abortKey = uniqueKey("aborted.bin")
        let abortId = try await client.createMultipartUpload(key: abortKey)
        _ = try await client.uploadPart(key: abortKey, uploadId: abortId, partNumber: 1, body: .bytes(pattern(1000, seed: 5)))
        try await client.abortMultipartUpload(key: abortKey, uploadId: abortId)
        #expect(!(try await client.listMultipartUploads(prefix: abortKey).contains { $0.uploadId == abortId }))
        do {
            _ = try await client.listParts(key: abortKey, uploadId: abortId)
            Issue.record("an aborted upload still lists parts")
        } catch let error as S3Error {
            #expect(error.code == "NoSuchUpload", "\(error)")
        }
    }

    @Test func listingUploadsFollowsPages() async throws {
        let client = try liveClient()
        let prefix = uniqueKey("paged/")
        var ids: [String] = []
        for i in 0..<5 { ids.append(try await client.createMultipartUpload(key: prefix + "f\(i)")) }
        let listed = try await client.listMultipartUploads(prefix: prefix, pageSize: 2)
        #expect(Set(listed.map(\.uploadId)) == Set(ids), "\(listed.count) of 5 listed")
        for (i, id) in ids.enumerated() { try await client.abortMultipartUpload(key: prefix + "f\(i)", uploadId: id) }
        #expect(try await client.listMultipartUploads(prefix: prefix).isEmpty)
    }

    @Test func presignedPutAndGetWorkAndTamperedOrExpiredAreRefused() async throws {
        let client = try liveClient()
        let key = uniqueKey("presigned file.txt")
        let file = FileManager.default.temporaryDirectory.appendingPathComponent(UUID().uuidString)
        try Data("presigned body".utf8).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let put = client.presignedURL(method: "PUT", key: key, expires: 300)
        #expect(try curlStatus(["-X", "PUT", "--data-binary", "@\(file.path)", put]) == 200)
        let get = client.presignedURL(method: "GET", key: key, expires: 300)
        #expect(try curlStatus([get]) == 200)
        #expect(try await client.getObject(key: key).body == Array("presigned body".utf8))
        // One hex digit of the signature changed.
        let last = get.last == "0" ? "1" : "0"
        #expect(try curlStatus([String(get.dropLast()) + last]) == 403)
        // Another key under the same signature.
        #expect(try curlStatus([get.replacingOccurrences(of: "presigned%20file", with: "presigned%20filX")]) == 403)
        // Signed 20 minutes ago for 60 seconds: expired.
        let expired = client.presignedURL(method: "GET", key: key, expires: 60, at: Int(Date().timeIntervalSince1970) - 1200)
        #expect(try curlStatus([expired]) == 403)
    }

    @Test func cancellationStopsATransferAtOnce() async throws {
        let client = try liveClient()
        let key = uniqueKey("cancelled.bin")
        let path = "/tmp/tg-cancel-\(UUID().uuidString)"
        // A sparse 2 GiB file: reading it is free, sending it takes seconds.
        let fd = open(path, O_RDWR | O_CREAT, 0o600)
        ftruncate(fd, 2 << 30)
        defer { close(fd); unlink(path) }
        let task = Task { try await client.putObject(key: key, body: .file(fd: fd, offset: 0, length: 2 << 30)) }
        try await Task.sleep(for: .milliseconds(300))
        let started = Date()
        task.cancel()
        do {
            _ = try await task.value
            Issue.record("the cancelled upload finished")
        } catch let error as S3Error {
            #expect(error.kind == .cancelled)
        }
        #expect(Date().timeIntervalSince(started) < 2)
    }

    @Test func oneGiBMultipartUploadAndRangedDownloadAreByteIdentical() async throws {
        let client = try liveClient()
        let key = uniqueKey("one-gib.bin")
        let source = "/tmp/tg-1gib-\(UUID().uuidString)"
        let target = source + ".down"
        defer { unlink(source); unlink(target) }
        let block = 64 << 20
        var expected = SHA256Stream()
        let fd = open(source, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        for i in 0..<16 {
            let bytes = pattern(block, seed: UInt64(i + 100))
            expected.update(bytes)
            _ = bytes.withUnsafeBytes { write(fd, $0.baseAddress, block) }
        }
        close(fd)
        let transfer = MultipartFileTransfer(client: client, partSize: 5 << 20, concurrency: 5)
        let etag = try await transfer.upload(path: source, key: key)
        #expect(etag.hasSuffix("-205\""))
        let written = try await transfer.download(key: key, path: target)
        #expect(written == 1 << 30)
        #expect(try SHA256Stream.file(target) == expected.finish())
        try await client.deleteObject(key: key)
    }
}

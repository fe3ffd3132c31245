import Crypto
import Foundation
import TestSupport
import Testing
import TransferEngine

#if canImport(Glibc)
    import Glibc
#endif

/// The object store's contract (`ObjectStore`), as S3 (SeaweedFS in the live tests) and the
/// S3 adapter keep it: `InMemoryObjectStore` must behave the same. Run by
/// `ObjectStoreContractTests` (the twin) and `ObjectStoreContractLiveTests` (S3).
public enum ObjectStoreContract {
    /// Every case, in the order they are listed.
    public static let cases: [ContractCase<ObjectStoreFixture>] = [
        putStoresBytesAndAttributes, aMissingObjectIsNotFound, aMultipartUploadCompletesToTheMultipartETag,
        crc32cPartsCarryTheirChecksums, aCRC32CGivenWithAFileIsChecked, theCompletionRefusesAPartNotStored, anAbortedUploadIsGone,
        openUploadsAreThoseOfTheExactKey,
        copiesKeepOrReplaceAttributesAndArePinned, partCopiesTakeARangeOfAPinnedSource, listingPagesThroughAPrefixInKeyOrder,
        aListingWithADelimiterRollsKeysIntoFolders, aReadIntoGivenMemoryLandsThere,
    ]

    // MARK: helpers: the one place bytes are made and errors read

    /// `count` bytes of a pattern chosen by `seed`.
    static func bytes(_ count: Int, seed: UInt8) -> [UInt8] { repeatingBytes(count, seed: seed, multiplier: 7 + Int(seed)) }

    /// The ETag S3 gives an object of `bytes` written at once: their MD5, quoted.
    static func etag(_ bytes: [UInt8]) -> String { "\"\(Digest.hex(Digest.md5(bytes)))\"" }

    /// The CRC-32C S3 lists for a part of `bytes`.
    static func crc32c(_ bytes: [UInt8]) -> String { Digest.crc32cBase64(bytes.withUnsafeBytes { Digest.crc32c($0) }) }

    /// The code of the error a call of the store threw; an error that is not the store's is
    /// recorded as an issue and reads as `internalError`, which no case expects.
    static func code(of error: any Error, sourceLocation: SourceLocation = #_sourceLocation) -> FailureCode {
        guard let failure = error as? TransferError else {
            Issue.record(error, "not an object store error", sourceLocation: sourceLocation)
            return .internalError
        }
        return failure.code
    }

    /// The code of the error `work` throws; nil when it throws none.
    static func failure(sourceLocation: SourceLocation = #_sourceLocation, _ work: () async throws -> Void) async -> FailureCode? {
        do {
            try await work()
            return nil
        } catch {
            return code(of: error, sourceLocation: sourceLocation)
        }
    }

    /// Reads `range` of `key` into a new file at `offset`, and gives the file's bytes back.
    static func readIntoFile(
        _ store: any ObjectStore, key: String, range: ClosedRange<Int64>, ifMatch: String?,
        at offset: Int64
    ) async throws -> [UInt8] {
        let path = NSTemporaryDirectory() + "port-contract-" + UUID().uuidString
        let fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0o600)
        try #require(fd >= 0, "cannot create \(path)")
        defer { unlink(path) }
        let file = SpoolFile(fd: fd, path: path)
        try await store.read(key: key, range: range, ifMatch: ifMatch, into: file, at: offset)
        var out = [UInt8](repeating: 0, count: Int(file.size))
        let got = out.withUnsafeMutableBytes { pread(fd, $0.baseAddress, $0.count, 0) }
        try #require(got == out.count)
        return out
    }

    /// A new file holding `bytes` (unlinked at once: the open file is all a store reads).
    static func spoolFile(holding bytes: [UInt8]) throws -> SpoolFile {
        let path = NSTemporaryDirectory() + "port-contract-" + UUID().uuidString
        let fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0o600)
        try #require(fd >= 0, "cannot create \(path)")
        unlink(path)
        let file = SpoolFile(fd: fd, path: path)
        try bytes.withUnsafeBytes { try file.write($0, at: 0) }
        return file
    }

    static let attributes = ObjectAttributesSpec(
        contentType: "text/plain", cacheControl: "max-age=60",
        contentDisposition: "attachment; filename=\"a.txt\"", metadata: ["origin": "contract"])

    /// Whether `found` are the attributes `wanted` that S3 keeps for every object.
    static func same(_ found: ObjectAttributesSpec, _ wanted: ObjectAttributesSpec) -> Bool {
        found.contentType == wanted.contentType && found.cacheControl == wanted.cacheControl
            && found.contentDisposition == wanted.contentDisposition && found.metadata == wanted.metadata
    }

    // MARK: cases

    static let putStoresBytesAndAttributes = ContractCase<ObjectStoreFixture>(
        "a put stores bytes and attributes; HEAD and reads of ranges, pinned or not, give them back"
    ) { f in
        let key = f.key("put.txt"), body = bytes(1000, seed: 1)
        let written = try await f.store.putObject(key: key, data: .bytes(body), attributes: attributes)
        #expect(written == etag(body))
        let found = try await f.store.properties(of: key)
        #expect(found.size == 1000 && found.etag == written && same(found.attributes, attributes))
        #expect(found.lastModified?.hasSuffix(" GMT") == true, "HeadObject's Last-Modified, an HTTP-date: \(found.lastModified ?? "none")")
        #expect(try await f.store.read(key: key, range: 10...19, ifMatch: nil) == Array(body[10...19]))
        #expect(try await f.store.read(key: key, range: 0...999, ifMatch: written) == body)
        #expect(await failure { _ = try await f.store.read(key: key, range: 0...9, ifMatch: etag([0])) } == .preconditionFailed)
        let file = try await readIntoFile(f.store, key: key, range: 100...109, ifMatch: written, at: 7)
        #expect(file.count == 17 && Array(file[7...]) == Array(body[100...109]))
        // No type named: the gateway's default, for every way an object is made.
        let plain = f.key("plain.bin")
        _ = try await f.store.putObject(key: plain, data: .bytes([1, 2, 3]), attributes: ObjectAttributesSpec())
        let plainFound = try await f.store.properties(of: plain)
        #expect(plainFound.attributes.contentType == "application/octet-stream" && plainFound.attributes.metadata.isEmpty)
        // A put replaces the object.
        let replaced = try await f.store.putObject(key: plain, data: .bytes([4, 5]), attributes: ObjectAttributesSpec())
        #expect(try await f.store.properties(of: plain).etag == replaced)
        #expect(try await f.store.read(key: plain, range: 0...1, ifMatch: nil) == [4, 5])
    }

    static let aReadIntoGivenMemoryLandsThere = ContractCase<ObjectStoreFixture>(
        "a read handed memory of its own (a download's spent block) gives the range's bytes in that memory, pinned as any read"
    ) { f in
        let key = f.key("reused.bin"), body = bytes(300 << 10, seed: 5)
        let written = try await f.store.putObject(key: key, data: .bytes(body), attributes: ObjectAttributesSpec())
        var spent = bytes(256 << 10, seed: 6)
        let memory = spent.withUnsafeBufferPointer { UInt(bitPattern: $0.baseAddress) }
        spent = try await f.store.read(key: key, range: 1000...(1000 + (200 << 10) - 1), ifMatch: written, reusing: consume spent)
        #expect(spent == Array(body[1000..<(1000 + (200 << 10))]))
        #expect(spent.withUnsafeBufferPointer { UInt(bitPattern: $0.baseAddress) } == memory, "received into the memory given, not a copy")
        #expect(
            await failure { _ = try await f.store.read(key: key, range: 0...9, ifMatch: etag([0]), reusing: [1, 2]) } == .preconditionFailed
        )
    }

    static let aMissingObjectIsNotFound = ContractCase<ObjectStoreFixture>(
        "a missing object is not_found to HEAD, reads and copies; deleting one is no error"
    ) { f in
        let missing = f.key("missing.bin")
        // S3 names it NoSuchKey where it sends a body, NotFound on HEAD (a 404 has no body there).
        #expect(await failure { _ = try await f.store.properties(of: missing) } == .notFound)
        #expect(await failure { _ = try await f.store.read(key: missing, range: 0...9, ifMatch: nil) } == .notFound)
        #expect(
            await failure { _ = try await f.store.copyObject(from: missing, to: f.key("copy"), attributes: nil, ifMatch: nil) }
                == .notFound)
        try await f.store.deleteObject(key: missing)
        let key = f.key("deleted.bin")
        _ = try await f.store.putObject(key: key, data: .bytes([1]), attributes: ObjectAttributesSpec())
        try await f.store.deleteObject(key: key)
        #expect(await failure { _ = try await f.store.properties(of: key) } == .notFound)
        do {
            _ = try await f.store.properties(of: key)
        } catch {
            #expect((error as? TransferError)?.retryable == false, "no retry makes an object exist")
        }
    }

    static let aMultipartUploadCompletesToTheMultipartETag = ContractCase<ObjectStoreFixture>(
        "a multipart upload lists its parts in order and completes to S3's multipart ETag, with the attributes it was made with"
    ) { f in
        let key = f.key("multi.bin")
        let made = ObjectAttributesSpec(contentType: "application/x-contract", metadata: ["part": "two"])
        let id = try await f.store.createMultipartUpload(key: key, attributes: made)
        let first = bytes(5 << 20, seed: 2), second = bytes(1000, seed: 3)
        let two = try await f.store.uploadPart(key: key, uploadID: id, part: 2, data: .bytes(second), checksum: .md5)
        let one = try await f.store.uploadPart(key: key, uploadID: id, part: 1, data: .bytes(first), checksum: .md5)
        #expect(one == RecordedPart(number: 1, size: 5 << 20, etag: etag(first)))
        #expect(two == RecordedPart(number: 2, size: 1000, etag: etag(second)))
        #expect(try await f.store.listParts(key: key, uploadID: id) == [one, two])
        // The same part sent again replaces it.
        let again = try await f.store.uploadPart(key: key, uploadID: id, part: 2, data: .bytes(second), checksum: .md5)
        #expect(try await f.store.listParts(key: key, uploadID: id) == [one, again])
        let whole = try await f.store.completeMultipartUpload(key: key, uploadID: id, parts: [one, again])
        #expect(whole == MultipartETag.expected(for: [one.etag, again.etag]))
        let found = try await f.store.properties(of: key)
        #expect(found.size == (5 << 20) + 1000 && found.etag == whole && same(found.attributes, made))
        let seam = Int64(5 << 20)
        #expect(
            try await f.store.read(key: key, range: (seam - 5)...(seam + 4), ifMatch: whole) == Array(first.suffix(5) + second.prefix(5)))
        #expect(await failure { _ = try await f.store.listParts(key: key, uploadID: id) } == .noSuchUpload, "completed: gone")
        #expect(try await !f.store.openUploads(key: key, olderThan: 0).contains(id))
    }

    static let crc32cPartsCarryTheirChecksums = ContractCase<ObjectStoreFixture>(
        "the parts of an upload made with CRC-32C carry their checksums, listed and completed"
    ) { f in
        let key = f.key("crc.bin")
        let id = try await f.store.createMultipartUpload(key: key, attributes: ObjectAttributesSpec(), checksum: .crc32c)
        let first = bytes(5 << 20, seed: 4), second = bytes(777, seed: 5)
        let one = try await f.store.uploadPart(key: key, uploadID: id, part: 1, data: .bytes(first), checksum: .crc32c)
        let two = try await f.store.uploadPart(key: key, uploadID: id, part: 2, data: .bytes(second), checksum: .crc32c)
        #expect(one == RecordedPart(number: 1, size: 5 << 20, etag: etag(first), checksum: crc32c(first)))
        #expect(two.checksum == crc32c(second))
        // AWS lists each part's checksum; SeaweedFS lists none: a store lists the part's own or none.
        let listed = try await f.store.listParts(key: key, uploadID: id)
        #expect(listed.map { [$0.number, Int($0.size)] } == [[1, 5 << 20], [2, 777]] && listed.map(\.etag) == [one.etag, two.etag])
        #expect(zip(listed, [one, two]).allSatisfy { $0.checksum == nil || $0.checksum == $1.checksum }, "\(listed)")
        let whole = try await f.store.completeMultipartUpload(key: key, uploadID: id, parts: [one, two])
        #expect(try await f.store.properties(of: key).etag == whole)
        #expect(try await f.store.read(key: key, range: Int64(5 << 20)...Int64((5 << 20) + 776), ifMatch: nil) == second)
    }

    static let aCRC32CGivenWithAFileIsChecked = ContractCase<ObjectStoreFixture>(
        "a part or object sent from a file with its CRC-32C given is stored with it; one given wrong is refused with checksum_mismatch and nothing is stored"
    ) { f in
        let body = bytes(3000, seed: 8), range = Array(body[1000...])
        let file = try spoolFile(holding: body)
        let whole = body.withUnsafeBytes { Digest.crc32c($0) }, ofRange = range.withUnsafeBytes { Digest.crc32c($0) }
        let key = f.key("given.bin")
        let put = { (crc: UInt32) in
            try await f.store.putObject(
                key: key, data: .file(file, offset: 0, length: 3000, crc32c: crc), attributes: ObjectAttributesSpec())
        }
        #expect(await failure { _ = try await put(whole ^ 1) } == .checksumMismatch)
        #expect(await failure { _ = try await f.store.properties(of: key) } == .notFound, "nothing was stored")
        #expect(try await put(whole) == etag(body))
        let id = try await f.store.createMultipartUpload(key: key, attributes: ObjectAttributesSpec(), checksum: .crc32c)
        let send = { (crc: UInt32) in
            try await f.store.uploadPart(
                key: key, uploadID: id, part: 1, data: .file(file, offset: 1000, length: 2000, crc32c: crc), checksum: .crc32c)
        }
        #expect(await failure { _ = try await send(ofRange ^ 0x8000_0000) } == .checksumMismatch)
        #expect(try await f.store.listParts(key: key, uploadID: id).isEmpty, "nothing was stored")
        let part = try await send(ofRange)
        #expect(part == RecordedPart(number: 1, size: 2000, etag: etag(range), checksum: crc32c(range)))
        _ = try await f.store.completeMultipartUpload(key: key, uploadID: id, parts: [part])
        #expect(try await f.store.read(key: key, range: 0...1999, ifMatch: nil) == range)
    }

    static let theCompletionRefusesAPartNotStored = ContractCase<ObjectStoreFixture>(
        "a completion naming a part S3 does not hold (another ETag) is refused with invalid_part, and the upload stays"
    ) { f in
        let key = f.key("refused.bin")
        let id = try await f.store.createMultipartUpload(key: key, attributes: ObjectAttributesSpec())
        let body = bytes(100, seed: 6)
        let part = try await f.store.uploadPart(key: key, uploadID: id, part: 1, data: .bytes(body), checksum: .md5)
        let forged = RecordedPart(number: 1, size: 100, etag: etag([9]))
        #expect(await failure { _ = try await f.store.completeMultipartUpload(key: key, uploadID: id, parts: [forged]) } == .invalidPart)
        #expect(try await f.store.listParts(key: key, uploadID: id) == [part])
        #expect(await failure { _ = try await f.store.properties(of: key) } == .notFound, "nothing was made")
        _ = try await f.store.completeMultipartUpload(key: key, uploadID: id, parts: [part])
        #expect(try await f.store.read(key: key, range: 0...99, ifMatch: nil) == body)
    }

    static let anAbortedUploadIsGone = ContractCase<ObjectStoreFixture>(
        "an aborted upload is gone, parts and listing; aborting one never made is no_such_upload, which abortIfOpen takes as done"
    ) { f in
        let key = f.key("aborted.bin")
        let id = try await f.store.createMultipartUpload(key: key, attributes: ObjectAttributesSpec())
        _ = try await f.store.uploadPart(key: key, uploadID: id, part: 1, data: .bytes(bytes(10, seed: 7)), checksum: .md5)
        try await f.store.abortMultipartUpload(key: key, uploadID: id)
        #expect(await failure { _ = try await f.store.listParts(key: key, uploadID: id) } == .noSuchUpload)
        #expect(try await !f.store.openUploads(key: key, olderThan: 0).contains(id))
        // Aborted a moment ago, SeaweedFS answers a second abort sometimes 204, sometimes NoSuchUpload.
        let second = await failure { try await f.store.abortMultipartUpload(key: key, uploadID: id) }
        #expect(second == nil || second == .noSuchUpload, "\(second.map(\.rawValue) ?? "no error")")
        let unknown = "never-made-\(UInt32.random(in: 0...UInt32.max))"
        #expect(await failure { try await f.store.abortMultipartUpload(key: key, uploadID: unknown) } == .noSuchUpload)
        try await f.store.abortIfOpen(key: key, uploadID: unknown)
        try await f.store.abortIfOpen(key: key, uploadID: id)
        #expect(await failure { _ = try await f.store.completeMultipartUpload(key: key, uploadID: id, parts: []) } != nil)
    }

    static let openUploadsAreThoseOfTheExactKey = ContractCase<ObjectStoreFixture>(
        "the open uploads of a key are those of exactly that key, begun at least the age ago"
    ) { f in
        let key = f.key("open.bin")
        let mine = try await f.store.createMultipartUpload(key: key, attributes: ObjectAttributesSpec())
        let longer = try await f.store.createMultipartUpload(key: key + ".2", attributes: ObjectAttributesSpec())
        let open = try await f.store.openUploads(key: key, olderThan: 0)
        #expect(open == [mine], "not \(key).2's")
        #expect(try await f.store.openUploads(key: key, olderThan: 86_400).isEmpty, "begun just now")
        try await f.store.abortMultipartUpload(key: key, uploadID: mine)
        try await f.store.abortMultipartUpload(key: key + ".2", uploadID: longer)
        #expect(try await f.store.openUploads(key: key, olderThan: 0).isEmpty)
    }

    static let copiesKeepOrReplaceAttributesAndArePinned = ContractCase<ObjectStoreFixture>(
        "a copy keeps the source's attributes or replaces them all; pinned to another ETag it is refused"
    ) { f in
        let source = f.key("source.txt"), body = bytes(2000, seed: 8)
        let sourceETag = try await f.store.putObject(key: source, data: .bytes(body), attributes: attributes)
        let kept = f.key("kept.txt")
        let keptETag = try await f.store.copyObject(from: source, to: kept, attributes: nil, ifMatch: sourceETag)
        let keptFound = try await f.store.properties(of: kept)
        #expect(keptETag == sourceETag && keptFound.etag == keptETag && keptFound.size == 2000 && same(keptFound.attributes, attributes))
        let replaced = f.key("replaced.txt")
        let newOnes = ObjectAttributesSpec(contentType: "text/csv", metadata: ["copied": "yes"])
        _ = try await f.store.copyObject(from: source, to: replaced, attributes: newOnes, ifMatch: nil)
        let replacedFound = try await f.store.properties(of: replaced)
        #expect(same(replacedFound.attributes, newOnes), "\(replacedFound.attributes)")
        #expect(try await f.store.read(key: replaced, range: 0...1999, ifMatch: nil) == body)
        let refused = f.key("refused.txt")
        #expect(
            await failure { _ = try await f.store.copyObject(from: source, to: refused, attributes: nil, ifMatch: etag([1])) }
                == .preconditionFailed)
        #expect(await failure { _ = try await f.store.properties(of: refused) } == .notFound)
    }

    static let partCopiesTakeARangeOfAPinnedSource = ContractCase<ObjectStoreFixture>(
        "part copies take ranges of a pinned source, are listed with the ETags they answered, and complete to its bytes"
    ) { f in
        let source = f.key("big-source.bin"), body = bytes((5 << 20) + 300, seed: 9)
        let sourceETag = try await f.store.putObject(key: source, data: .bytes(body), attributes: ObjectAttributesSpec())
        let key = f.key("copied.bin")
        let id = try await f.store.createMultipartUpload(key: key, attributes: ObjectAttributesSpec())
        let cut = Int64(5 << 20)
        let one = try await f.store.copyPart(key: key, uploadID: id, part: 1, sourceKey: source, range: 0...(cut - 1), ifMatch: sourceETag)
        let two = try await f.store.copyPart(
            key: key, uploadID: id, part: 2, sourceKey: source, range: cut...(cut + 299), ifMatch: sourceETag)
        // AWS answers the MD5 of the range; SeaweedFS answers ETags of its own: only the listing must agree.
        #expect(!one.isEmpty && !two.isEmpty && one != two)
        #expect(
            await failure {
                _ = try await f.store.copyPart(key: key, uploadID: id, part: 3, sourceKey: source, range: 0...9, ifMatch: etag([2]))
            } == .preconditionFailed)
        let parts = [RecordedPart(number: 1, size: cut, etag: one), RecordedPart(number: 2, size: 300, etag: two)]
        #expect(try await f.store.listParts(key: key, uploadID: id).map(\.etag) == [one, two])
        _ = try await f.store.completeMultipartUpload(key: key, uploadID: id, parts: parts)
        #expect(try await f.store.read(key: key, range: (cut - 10)...(cut + 299), ifMatch: nil) == Array(body[Int(cut - 10)...]))
    }

    static let listingPagesThroughAPrefixInKeyOrder = ContractCase<ObjectStoreFixture>(
        "a listing pages through a prefix in key order, each page naming where the next begins"
    ) { f in
        let folder = f.key("listed/")
        for name in ["b", "a", "c/d"] {
            _ = try await f.store.putObject(
                key: folder + name, data: .bytes(bytes(name.count * 10, seed: 10)), attributes: ObjectAttributesSpec())
        }
        _ = try await f.store.putObject(key: f.key("listed-not/x"), data: .bytes([1]), attributes: ObjectAttributesSpec())
        let first = try await f.store.list(prefix: folder, after: nil, limit: 2)
        #expect(first.objects.map(\.key) == [folder + "a", folder + "b"] && first.next == folder + "b")
        #expect(
            first.objects.map(\.size) == [10, 10] && first.objects.map(\.etag) == [etag(bytes(10, seed: 10)), etag(bytes(10, seed: 10))])
        #expect(first.objects.allSatisfy { !$0.lastModified.isEmpty })
        let second = try await f.store.list(prefix: folder, after: first.next, limit: 2)
        #expect(second.objects.map(\.key) == [folder + "c/d"] && second.next == nil)
        let whole = try await f.store.list(prefix: folder, after: nil, limit: 3)
        #expect(whole.objects.count == 3 && whole.next == nil, "a full last page names no next one")
        #expect(try await f.store.list(prefix: folder + "none/", after: nil, limit: 10).objects.isEmpty)
    }

    static let aListingWithADelimiterRollsKeysIntoFolders = ContractCase<ObjectStoreFixture>(
        "with a delimiter, keys past a folder come once as that folder, folders and objects share the page size"
    ) { f in
        let root = f.key("tree/")
        for name in ["a.txt", "b/1.txt", "b/2.txt", "c/d/1.txt", "e.txt"] {
            _ = try await f.store.putObject(key: root + name, data: .bytes([7]), attributes: ObjectAttributesSpec())
        }
        let first = try await f.store.list(prefix: root, after: nil, limit: 2, delimiter: "/")
        #expect(first.objects.map(\.key) == [root + "a.txt"] && first.folders == [root + "b/"], "\(first)")
        #expect(first.next == root + "b/")
        // Past every key of the folder the page ended with.
        let second = try await f.store.list(prefix: root, after: root + "b/\u{10FFFF}", limit: 2, delimiter: "/")
        #expect(second.folders == [root + "c/"] && second.objects.map(\.key) == [root + "e.txt"], "\(second)")
        #expect(second.next == nil)
        let inside = try await f.store.list(prefix: root + "c/", after: nil, limit: 10, delimiter: "/")
        #expect(inside.folders == [root + "c/d/"] && inside.objects.isEmpty && inside.next == nil)
    }
}

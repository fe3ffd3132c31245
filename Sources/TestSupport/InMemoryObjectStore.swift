import Crypto
import Synchronization
import TransferEngine

#if canImport(Glibc)
    import Glibc
#endif

/// The object store's twin: objects and multipart uploads in memory, part ETags the MD5 of
/// their bytes and the completed ETag S3's rule, as S3 does (`ObjectStoreContract` in
/// PortContracts runs the same cases on this twin and on `S3ObjectStore`). `fault` may fail any
/// call; `beforePart` runs before each part moves (to hold parts in flight).
public final class InMemoryObjectStore: ObjectStore {
    public enum Call: Equatable, Sendable {
        case size(String), create, copyPart(Int), uploadPart(Int), read(Int64), complete, abort, copyObject, putObject, delete
    }
    struct Upload {
        let key: String
        var attributes = ObjectAttributesSpec()
        var parts: [Int: [UInt8]] = [:]
        /// When it began, in the clock's milliseconds.
        var startedAt = 0
        /// The algorithm it was created with (as AWS, a part sent with another check is refused).
        var checksum: PartChecksum? = nil
    }
    private struct State {
        var objects: [String: [UInt8]] = [:]
        /// As S3 answers them: the MD5 of a plain object, the multipart ETag of a completed upload.
        var etags: [String: String] = [:]
        var attributes: [String: ObjectAttributesSpec] = [:]
        var uploads: [String: Upload] = [:]
        var calls: [Call] = []
        var nextUpload = 0
    }
    private let state = Mutex(State())
    /// Reads (`read(key:range:ifMatch:reusing:)`) whose bytes landed in the memory they were given.
    public let readsIntoGivenMemory = Atomic(0)
    public let fault: @Sendable (Call, Int) -> TransferError?
    public let beforePart: (@Sendable (Int) async throws -> Void)?
    /// What uploads' ages are read by (without one, time stands still).
    public let clock: ManualClock?

    /// `fault(call, n)`: n counts earlier calls equal to this one.
    public init(
        fault: @escaping @Sendable (Call, Int) -> TransferError? = { _, _ in nil },
        beforePart: (@Sendable (Int) async throws -> Void)? = nil, clock: ManualClock? = nil
    ) {
        self.fault = fault
        self.beforePart = beforePart
        self.clock = clock
    }

    private var now: Int { clock?.now() ?? 0 }

    public static func etag(_ bytes: [UInt8]) -> String { "\"\(Digest.hex(Digest.md5(bytes)))\"" }

    public func put(_ key: String, _ bytes: [UInt8], attributes: ObjectAttributesSpec = ObjectAttributesSpec()) {
        state.withLock { s in
            s.objects[key] = bytes
            s.etags[key] = Self.etag(bytes)
            s.attributes[key] = attributes.withDefaultType
        }
    }
    public func attributes(_ key: String) -> ObjectAttributesSpec? { state.withLock { $0.attributes[key] } }
    public func object(_ key: String) -> [UInt8]? { state.withLock { $0.objects[key] } }
    public var openUploads: Int { state.withLock { $0.uploads.count } }
    public var calls: [Call] { state.withLock { $0.calls } }
    public func count(_ call: Call) -> Int { state.withLock { $0.calls.filter { $0 == call }.count } }

    private func enter(_ call: Call) throws {
        let n = state.withLock { s in
            let n = s.calls.filter { $0 == call }.count
            s.calls.append(call)
            return n
        }
        if let error = fault(call, n) { throw error }
    }

    public func properties(of key: String) async throws -> ObjectProperties {
        try enter(.size(key))
        guard
            let found = state.withLock({ s in
                s.objects[key].map {
                    ObjectProperties(
                        size: Int64($0.count), etag: s.etags[key] ?? Self.etag($0), lastModified: Self.headLastModified,
                        attributes: s.attributes[key] ?? ObjectAttributesSpec().withDefaultType)
                }
            })
        else {
            throw TransferError(code: .notFound, retryable: false)
        }
        return found
    }

    /// The `lastModified` every listed object shows.
    public static let listedLastModified = "2026-12-01T18:30:02Z"
    /// The same moment as HeadObject's `Last-Modified` (an HTTP-date) shows it.
    public static let headLastModified = "Tue, 01 Dec 2026 18:30:02 GMT"

    public func list(prefix: String, after: String?, limit: Int, delimiter: String?) async throws -> ObjectPage {
        // Compared as UTF-8 bytes, as S3 sorts.
        let keys = keys(under: prefix).filter { key in after.map { $0.utf8.lexicographicallyPrecedes(key.utf8) } ?? true }
        return state.withLock { s in
            var page = ObjectPage(objects: [], next: nil)
            var entries = 0
            for key in keys {
                var folder: String?
                if let delimiter, !delimiter.isEmpty {
                    let rest = String(decoding: key.utf8.dropFirst(prefix.utf8.count), as: UTF8.self)
                    if let end = rest.range(of: delimiter) { folder = prefix + rest[..<end.upperBound] }
                }
                if let folder, page.folders.last == folder { continue }
                if entries == limit {
                    let lastFolder = page.folders.last ?? "", lastKey = page.objects.last?.key ?? ""
                    page.next = lastFolder.utf8.lexicographicallyPrecedes(lastKey.utf8) ? lastKey : lastFolder
                    break
                }
                entries += 1
                if let folder {
                    page.folders.append(folder)
                } else {
                    // Whole seconds, as SeaweedFS lists them (AWS adds ".000").
                    page.objects.append(
                        ObjectSummary(
                            key: key, size: Int64(s.objects[key]?.count ?? 0), etag: s.etags[key] ?? "",
                            lastModified: Self.listedLastModified))
                }
            }
            return page
        }
    }

    public func createMultipartUpload(key: String, attributes: ObjectAttributesSpec, checksum: PartChecksum?) async throws -> String {
        try enter(.create)
        return state.withLock { s in
            s.nextUpload += 1
            let id = "upload-\(s.nextUpload)"
            s.uploads[id] = Upload(
                key: key, attributes: attributes.withDefaultType, startedAt: now,
                checksum: checksum == .crc32c ? .crc32c : nil)
            return id
        }
    }

    private func storePart(_ uploadID: String, _ part: Int, _ bytes: [UInt8]) throws -> String {
        try state.withLock { s in
            guard s.uploads[uploadID] != nil else { throw TransferError(code: .noSuchUpload, retryable: false) }
            s.uploads[uploadID]?.parts[part] = bytes
        }
        return Self.etag(bytes)
    }

    public func copyPart(
        key: String, uploadID: String, part: Int, sourceKey: String, range: ClosedRange<Int64>?,
        ifMatch: String?
    ) async throws -> String {
        try await beforePart?(part)
        try enter(.copyPart(part))
        guard let source = object(sourceKey) else { throw TransferError(code: .notFound, retryable: false) }
        if let ifMatch, ifMatch != etag(of: sourceKey) { throw TransferError.preconditionFailed }
        let bytes = range.map { Array(source[Int($0.lowerBound)...Int($0.upperBound)]) } ?? source
        return try storePart(uploadID, part, bytes)
    }

    public func uploadPart(key: String, uploadID: String, part: Int, data: PartData, checksum: PartChecksum) async throws -> RecordedPart {
        try await beforePart?(part)
        try enter(.uploadPart(part))
        let declared = state.withLock { $0.uploads[uploadID]?.checksum }
        // AWS: "Checksum Type mismatch" for a part whose check is not the upload's algorithm.
        guard declared == nil ? checksum == .md5 : checksum == declared else {
            throw TransferError(code: .storageRejected, retryable: false)
        }
        let bytes = try Self.bytes(data)
        let etag = try storePart(uploadID, part, bytes)
        return RecordedPart(number: part, size: Int64(bytes.count), etag: etag, checksum: declared.map { _ in Self.crc32c(bytes) })
    }

    /// The CRC-32C S3 would list for `bytes`.
    public static func crc32c(_ bytes: [UInt8]) -> String {
        Digest.crc32cBase64(bytes.withUnsafeBytes { Digest.crc32c($0) })
    }

    public func listParts(key: String, uploadID: String) async throws -> [RecordedPart] {
        try state.withLock { s in
            guard let upload = s.uploads[uploadID] else { throw TransferError(code: .noSuchUpload, retryable: false) }
            return upload.parts.map { number, bytes in
                RecordedPart(
                    number: number, size: Int64(bytes.count), etag: Self.etag(bytes),
                    checksum: upload.checksum == nil ? nil : Self.crc32c(bytes))
            }
            .sorted { $0.number < $1.number }
        }
    }

    public func completeMultipartUpload(
        key: String, uploadID: String, parts: [RecordedPart], condition: WriteCondition?
    ) async throws -> String {
        try enter(.complete)
        return try state.withLock { s in
            guard let upload = s.uploads[uploadID] else { throw TransferError(code: .noSuchUpload, retryable: false) }
            try Self.check(condition, s.objects[key].map { s.etags[key] ?? Self.etag($0) })
            var whole: [UInt8] = []
            for part in parts {
                guard let bytes = upload.parts[part.number], Self.etag(bytes) == part.etag else {
                    throw TransferError(code: .invalidPart, retryable: false)
                }
                // AWS: an upload created with an algorithm is completed with each part's checksum.
                if upload.checksum != nil, part.checksum != Self.crc32c(bytes) {
                    throw TransferError(code: .invalidPart, retryable: false)
                }
                whole += bytes
            }
            let etag = MultipartETag.expected(for: parts.map(\.etag)) ?? "\"x\""
            s.objects[key] = whole
            s.etags[key] = etag
            s.attributes[key] = upload.attributes
            s.uploads[uploadID] = nil
            return etag
        }
    }

    public func abortMultipartUpload(key: String, uploadID: String) async throws {
        try enter(.abort)
        // As S3: an upload it no longer has (aborted, completed, never made) is NoSuchUpload there.
        guard state.withLock({ $0.uploads.removeValue(forKey: uploadID) != nil }) else {
            throw TransferError(code: .noSuchUpload, retryable: false)
        }
    }

    public func openUploads(key: String, olderThan age: Double) async throws -> [String] {
        let startedBy = now - Int(age * 1000)
        return state.withLock { s in s.uploads.filter { $0.value.key == key && $0.value.startedAt <= startedBy }.map(\.key).sorted() }
    }

    /// An upload begun `age` seconds ago by someone else (a dead owner, another writer).
    public func addUpload(key: String, age: Double) -> String {
        let startedAt = now - Int(age * 1000)
        return state.withLock { s in
            s.nextUpload += 1
            let id = "upload-\(s.nextUpload)"
            s.uploads[id] = Upload(key: key, startedAt: startedAt)
            return id
        }
    }

    public func copyObject(
        from sourceKey: String, to key: String, attributes: ObjectAttributesSpec?, ifMatch: String?, condition: WriteCondition?
    ) async throws -> String {
        try enter(.copyObject)
        guard let bytes = object(sourceKey) else { throw TransferError(code: .notFound, retryable: false) }
        if let ifMatch, ifMatch != etag(of: sourceKey) { throw TransferError.preconditionFailed }
        try Self.check(condition, etag(of: key))
        put(key, bytes, attributes: attributes ?? self.attributes(sourceKey) ?? ObjectAttributesSpec())
        return Self.etag(bytes)
    }

    public func putObject(
        key: String, data: PartData, attributes: ObjectAttributesSpec, condition: WriteCondition?
    ) async throws
        -> String
    {
        try enter(.putObject)
        let bytes = try Self.bytes(data)
        try Self.check(condition, etag(of: key))
        put(key, bytes, attributes: attributes)
        return Self.etag(bytes)
    }

    /// As S3 checks `If-None-Match: *` and `If-Match` against what the key holds (`current`).
    static func check(_ condition: WriteCondition?, _ current: String?) throws {
        switch condition {
        case .absent where current != nil: throw TransferError.objectExists
        case .etag(let etag) where current != etag: throw TransferError.destinationChanged
        default: return
        }
    }

    public func read(key: String, range: ClosedRange<Int64>, ifMatch: String?) async throws -> [UInt8] {
        try enter(.read(range.lowerBound))
        guard let source = object(key) else { throw TransferError(code: .notFound, retryable: false) }
        if let ifMatch, ifMatch != etag(of: key) { throw TransferError.preconditionFailed }
        guard range.upperBound < Int64(source.count) else { throw TransferError(code: .invalidRange, retryable: false) }
        return Array(source[Int(range.lowerBound)...Int(range.upperBound)])
    }

    /// As S3's: the bytes land in `storage`'s memory (a new allocation only when it is shared
    /// or too small, as an array's copy on write decides).
    public func read(key: String, range: ClosedRange<Int64>, ifMatch: String?, reusing storage: consuming [UInt8]) async throws -> [UInt8] {
        let bytes = try await read(key: key, range: range, ifMatch: ifMatch)
        var storage = consume storage
        let given = storage.withUnsafeBufferPointer { $0.baseAddress }
        storage.removeAll(keepingCapacity: true)
        storage.append(contentsOf: bytes)
        if given != nil && storage.withUnsafeBufferPointer({ $0.baseAddress }) == given {
            readsIntoGivenMemory.add(1, ordering: .relaxed)
        }
        return storage
    }

    public func read(key: String, range: ClosedRange<Int64>, ifMatch: String?, into file: SpoolFile, at fileOffset: Int64) async throws {
        try await beforePart?(Int(range.lowerBound))
        try enter(.read(range.lowerBound))
        guard let source = object(key) else { throw TransferError(code: .notFound, retryable: false) }
        if let ifMatch, ifMatch != etag(of: key) { throw TransferError.preconditionFailed }
        guard range.upperBound < Int64(source.count) else { throw TransferError(code: .invalidRange, retryable: false) }
        let bytes = Array(source[Int(range.lowerBound)...Int(range.upperBound)])
        let written = bytes.withUnsafeBytes { pwrite(file.fd, $0.baseAddress, $0.count, off_t(fileOffset)) }
        guard written == bytes.count else { throw TransferError(code: .spoolFailed, retryable: true) }
    }

    public func deleteObject(key: String, ifMatch: String?) async throws {
        try enter(.delete)
        if let ifMatch, etag(of: key) != ifMatch { throw TransferError.preconditionFailed }
        state.withLock { s in
            s.objects[key] = nil
            s.etags[key] = nil
            s.attributes[key] = nil
        }
    }

    /// The keys stored under `prefix`.
    public func keys(under prefix: String) -> [String] {
        state.withLock { $0.objects.keys.filter { $0.hasPrefix(prefix) }.sorted() }
    }

    private func etag(of key: String) -> String? { state.withLock { s in s.etags[key] ?? s.objects[key].map(Self.etag) } }

    /// The bytes of `data`. A CRC-32C given with a file's range is checked against them, as S3
    /// checks the `x-amz-checksum-crc32c` the S3 adapter sends it as (`BadDigest`).
    static func bytes(_ data: PartData) throws -> [UInt8] {
        switch data {
        case .bytes(let bytes): return bytes
        case .file(let file, let offset, let length, let stated):
            var out = [UInt8](repeating: 0, count: Int(length))
            let got = out.withUnsafeMutableBytes { pread(file.fd, $0.baseAddress, Int(length), off_t(offset)) }
            guard got == Int(length) else { throw TransferError(code: .spoolFailed, retryable: true) }
            if let stated, stated != out.withUnsafeBytes({ Digest.crc32c($0) }) {
                throw TransferError(code: .checksumMismatch, retryable: false)
            }
            return out
        }
    }
}

/// A `SourceFetcher` twin serving one body, with or without ranges.
public struct InMemoryFetcher: SourceFetcher {
    public let body: [UInt8]
    public let ranges: Bool
    public var fault: @Sendable (ClosedRange<Int64>?) -> TransferError?
    /// Bytes handed out per `next()` of a stream.
    public var chunk: Int

    public init(
        body: [UInt8], ranges: Bool, chunk: Int = 64 * 1024,
        fault: @escaping @Sendable (ClosedRange<Int64>?) -> TransferError? = { _ in nil }
    ) {
        self.body = body
        self.ranges = ranges
        self.chunk = chunk
        self.fault = fault
    }

    public func probe(_ url: String) async throws -> SourceProbe {
        SourceProbe(size: ranges ? Int64(body.count) : nil, etag: ranges ? "\"v1\"" : nil, acceptsRanges: ranges)
    }

    public func fetch(_ url: String, range: ClosedRange<Int64>, ifMatch: String?, into file: SpoolFile) async throws -> UInt32? {
        if let error = fault(range) { throw error }
        guard range.upperBound < Int64(body.count) else { throw TransferError.sourceChanged }
        let bytes = Array(body[Int(range.lowerBound)...Int(range.upperBound)])
        return try bytes.withUnsafeBytes { written in
            try file.write(written, at: 0)
            return Digest.crc32c(written)
        }
    }

    public func stream(_ url: String, limit: Int64) async throws -> any ByteSource {
        if let error = fault(nil) { throw error }
        return ChunkedBytes(bytes: body, chunk: chunk, limit: limit)
    }
}

/// Bytes handed out in chunks, as a `ByteSource` (a request body, a source's stream).
public final class ChunkedBytes: ByteSource {
    let bytes: [UInt8]
    let chunk: Int
    let limit: Int64
    private let position = Mutex(0)

    public init(bytes: [UInt8], chunk: Int = 64 * 1024, limit: Int64 = .max) {
        self.bytes = bytes
        self.chunk = max(1, chunk)
        self.limit = limit
    }

    public func next() async throws -> ArraySlice<UInt8>? {
        try position.withLock { at in
            guard at < bytes.count else { return nil }
            let end = min(bytes.count, at + chunk)
            if Int64(end) > limit { throw TransferError(code: .entityTooLarge, retryable: false) }
            defer { at = end }
            return bytes[at..<end]
        }
    }
}

#if canImport(Glibc)
    import Glibc
#endif

/// Moves a local file to or from an object with multipart parallelism: the upload reads each
/// part straight from the file (`pread`), the download writes each ranged GET straight into
/// place (`pwrite`), so memory stays at curl's buffers whatever the file size.
public struct MultipartFileTransfer: Sendable {
    public let client: S3Client
    public let partSize: Int64
    public let concurrency: Int

    public init(client: S3Client, partSize: Int64, concurrency: Int) {
        self.client = client
        self.partSize = partSize
        self.concurrency = max(1, concurrency)
    }

    public struct FileError: Error, CustomStringConvertible {
        public let description: String
    }

    /// Uploads `path` to `key`; returns the object's ETag. A failure aborts the upload.
    public func upload(path: String, key: String, attributes: ObjectAttributes = ObjectAttributes()) async throws -> String {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw FileError(description: "cannot open \(path)") }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0 else { throw FileError(description: "cannot stat \(path)") }
        let size = Int64(info.st_size)
        if size <= partSize {
            return try await client.putObject(key: key, body: .file(fd: fd, offset: 0, length: size), attributes: attributes)
        }
        let count = Int((size + partSize - 1) / partSize)
        // S3 takes at most 10,000 parts; choosing a bigger part size is the caller's call.
        guard count <= 10_000 else {
            throw FileError(description: "\(count) parts of \(partSize) bytes: S3 takes at most 10,000; use a larger part size")
        }
        let uploadId = try await client.createMultipartUpload(key: key, attributes: attributes)
        do {
            let etags = try await forEachPart(count) { index in
                let offset = Int64(index) * partSize
                let length = min(partSize, size - offset)
                return try await client.uploadPart(
                    key: key, uploadId: uploadId, partNumber: index + 1,
                    body: .file(fd: fd, offset: offset, length: length))
            }
            return try await client.completeMultipartUpload(
                key: key, uploadId: uploadId, parts: etags.enumerated().map { (partNumber: $0.offset + 1, etag: $0.element) })
        } catch {
            // Detached: a cancelled task's own requests are cancelled at once, and the abort must go out.
            let client = self.client
            await Task.detached { try? await client.abortMultipartUpload(key: key, uploadId: uploadId) }.value
            throw error
        }
    }

    /// Downloads `key` into `path` with parallel ranged GETs; returns the bytes written.
    public func download(key: String, path: String) async throws -> Int64 {
        let head = try await client.headObject(key: key)
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw FileError(description: "cannot create \(path)") }
        defer { close(fd) }
        guard ftruncate(fd, off_t(head.size)) == 0 else { throw FileError(description: "cannot size \(path)") }
        let count = max(1, Int((head.size + partSize - 1) / partSize))
        _ = try await forEachPart(count) { index in
            let offset = Int64(index) * partSize
            guard head.size > 0 else { return "" }
            let end = min(offset + partSize, head.size) - 1
            _ = try await client.getObject(key: key, range: offset...end, ifMatch: head.etag, sink: .file(fd: fd, offset: offset))
            return ""
        }
        return head.size
    }

    /// Runs `work` for parts 0..<count with at most `concurrency` at once; results in part order.
    private func forEachPart(_ count: Int, _ work: @escaping @Sendable (Int) async throws -> String) async throws -> [String] {
        try await withThrowingTaskGroup(of: (Int, String).self) { group in
            var results = [String](repeating: "", count: count)
            var next = 0
            while next < min(concurrency, count) {
                let index = next
                group.addTask { (index, try await work(index)) }
                next += 1
            }
            while let (index, value) = try await group.next() {
                results[index] = value
                if next < count {
                    let index = next
                    group.addTask { (index, try await work(index)) }
                    next += 1
                }
            }
            return results
        }
    }
}

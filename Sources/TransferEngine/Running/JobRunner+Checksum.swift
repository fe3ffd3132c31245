import Crypto

/// The whole-object checksum a completed job reports (`Job.checksum`).
extension JobRunner {
    /// The parts' CRC-32Cs combined when every part has one (bytes that passed through the
    /// gateway: imports); for a copy, whose parts S3 copies without us seeing the bytes, the
    /// source's recorded checksum at the ETag the job pinned (the same bytes), or else the new
    /// object read back once (`etag` pinned) and summed. Nil when that read fails: the copy
    /// stands, without a checksum.
    func objectChecksum(_ job: Job, _ work: Work, parts: [RecordedPart], etag: String) async throws -> ObjectChecksum? {
        if !parts.isEmpty, let combined = ObjectChecksum.combining(parts) { return combined }
        guard job.kind == .copy, case .object(let source) = job.source, let key = job.objectKey else { return nil }
        if let sourceETag = work.sourceETag, let checksums, let known = try? await checksums.checksum(ofKey: source.key, etag: sourceETag) {
            return known
        }
        return try? await summed(key: key, size: work.plan.objectSize, etag: etag)
    }

    /// Bytes of an object read at once while summing it.
    static let sumReadSize: Int64 = 8 << 20

    /// The CRC-32C of the object at `key`, read in ranges of `sumReadSize`, each pinned to `etag`.
    private func summed(key: String, size: Int64, etag: String) async throws -> ObjectChecksum {
        var crc: UInt32 = 0
        var offset: Int64 = 0
        while offset < size {
            try Task.checkCancellation()
            let length = min(Self.sumReadSize, size - offset)
            let bytes = try await objects.read(key: key, range: offset...(offset + length - 1), ifMatch: etag)
            crc = bytes.withUnsafeBytes { Digest.crc32c($0, continuing: crc) }
            offset += length
        }
        return .crc32c(crc)
    }
}

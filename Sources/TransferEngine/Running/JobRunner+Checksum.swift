import Crypto

/// The whole-object checksum a completed job reports (`Job.checksum`).
extension JobRunner {
    /// The parts' CRC-32Cs combined when every part has one (bytes that passed through the
    /// gateway: imports); for a copy, whose parts S3 copies without us seeing the bytes, the
    /// source's recorded checksum at the ETag the job pinned (the same bytes). Nil otherwise: a
    /// copy of an object the gateway has no checksum for reports none rather than reading the
    /// whole source again.
    func objectChecksum(_ job: Job, _ work: Work, parts: [RecordedPart]) async throws -> ObjectChecksum? {
        if !parts.isEmpty, let combined = ObjectChecksum.combining(parts) { return combined }
        guard job.kind == .copy, case .object(let source) = job.source, let etag = work.sourceETag, let checksums else {
            return nil
        }
        return try? await checksums.checksum(ofKey: source.key, etag: etag)
    }

    /// The CRC-32C (base64) of one part's bytes, read back from where they wait.
    static func crc32c(of data: PartData) throws -> String {
        switch data {
        case .bytes(let bytes):
            return Digest.crc32cBase64(bytes.withUnsafeBytes { Digest.crc32c($0) })
        case .file(let file, let offset, let length):
            guard length > 0 else { return Digest.crc32cBase64(0) }
            guard let crc = file.crc32c(offset...(offset + length - 1)) else { throw TransferError(code: .spoolFailed, retryable: true) }
            return Digest.crc32cBase64(crc)
        }
    }
}

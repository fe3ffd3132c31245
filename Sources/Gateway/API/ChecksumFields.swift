import TransferEngine

/// How a whole-object checksum (`ObjectChecksum`) shows in the API: `checksum: {algorithm,
/// value}` in JSON (null when unknown), and RFC 9530's `Repr-Digest` on data answers.
enum ChecksumFields {
    /// `{"algorithm": "CRC32C", "value": "<base64>"}`, or `null`.
    static func json(_ checksum: ObjectChecksum?) -> [UInt8] {
        guard let checksum else { return Array("null".utf8) }
        var text = JSONText()
        text.begin()
        text.field("algorithm", .string(checksum.algorithm.rawValue))
        text.field("value", .string(checksum.value))
        text.end()
        return text.bytes
    }

    /// `Repr-Digest` (RFC 9530 §3): a Dictionary of the algorithm's registry key and the digest
    /// as a Byte Sequence, e.g. `crc32c=:4waSgw==:`. It is the digest of the whole selected
    /// representation, so a 206 carries the same value as a 200.
    static func reprDigest(_ checksum: ObjectChecksum) -> String {
        "\(checksum.algorithm.digestFieldKey)=:\(checksum.value):"
    }

    /// The checksum recorded for `key` at `etag`, when the routes have a checksum store; a store
    /// that fails answers nothing rather than failing the request (the checksum is extra).
    static func lookup(_ jobs: JobPorts, key: String, etag: String) async -> ObjectChecksum? {
        guard let checksums = jobs.checksums else { return nil }
        return try? await checksums.checksum(ofKey: key, etag: etag)
    }

    /// The whole-object checksum S3 keeps for `key`, if it is still the version at `etag`
    /// (`ObjectStore.fullObjectChecksum`); a failed ask answers nothing.
    static func stores(_ jobs: JobPorts, key: String, etag: String) async -> ObjectChecksum? {
        guard let found = try? await jobs.objects.fullObjectChecksum(of: key), found.etag == etag else { return nil }
        return found.checksum
    }
}

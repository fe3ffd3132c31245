import Crypto
import HTTPServer
import TransferEngine

/// Client uploads whose bytes S3 checks: created with `checksumAlgorithm: CRC32C`, their S3
/// multipart upload declares the algorithm and each part URL signs the part's
/// `x-amz-checksum-crc32c`, so S3 refuses (400 `BadDigest`) a part whose bytes are not the ones
/// the client summed, and a URL sent without that header does not verify (403). The gateway
/// keeps every checksum it signed for a part (`ClientUploadStore.signed`); at completion it
/// combines the parts' CRCs into the object's full CRC-32C (S3's own `ListParts` checksums
/// where the store reports them, else the one checksum signed for each part) and, given the
/// client's expected `checksum`, refuses to complete when they differ.
extension UploadsRoutes {
    /// The signed header carrying a part's CRC-32C (base64 of four big-endian bytes).
    static let checksumHeader = "x-amz-checksum-crc32c"

    /// `checksumAlgorithm` of a creation: `CRC32C`, or absent.
    static func partChecksum(_ fields: JSONFields) throws(APIError) -> PartChecksum? {
        guard let name = try fields.string("checksumAlgorithm") else { return nil }
        guard name == ObjectChecksum.Algorithm.crc32c.rawValue else {
            throw APIError.validation("checksumAlgorithm must be CRC32C (parts are checked by S3 with x-amz-checksum-crc32c).")
        }
        return .crc32c
    }

    /// `checksumAlgorithm` as an upload's answers show it: `CRC32C` or null.
    static func appendChecksumAlgorithm(_ text: inout JSONText, _ record: ClientUpload) {
        if record.partChecksum == .crc32c {
            text.field("checksumAlgorithm", .string(ObjectChecksum.Algorithm.crc32c.rawValue))
        } else {
            text.rawField("checksumAlgorithm", Array("null".utf8))
        }
    }

    /// `POST /v1/uploads/{id}/parts` with `parts: [{partNumber, checksum}]`: each URL signs
    /// its part's checksum, and the checksums are recorded before the URLs are handed out.
    func signChecked(_ upload: Upload, _ fields: JSONFields) async throws -> HTTPResponse {
        guard upload.record.partChecksum != nil else {
            throw APIError.validation("parts with checksums need an upload created with checksumAlgorithm CRC32C; send partNumbers.")
        }
        guard !fields.has("partNumbers") else {
            throw APIError.validation("This upload's part URLs sign each part's checksum: send parts [{partNumber, checksum}].")
        }
        guard let values = try fields.array("parts"), !values.isEmpty, values.count <= Self.urlsPerAnswer else {
            throw APIError.validation("parts must list 1 to \(Self.urlsPerAnswer) parts [{partNumber, checksum}].")
        }
        var numbers: [Int] = [], checksums: [Int: String] = [:]
        for value in values {
            guard case .object(let members) = value, members.pairs.allSatisfy({ $0.key == "partNumber" || $0.key == "checksum" }),
                let n = Self.partNumber(members["partNumber"]), case .string(let checksum)? = members["checksum"]
            else {
                throw APIError.validation("parts must be [{partNumber, checksum}], part numbers whole from 1 to 10000.")
            }
            guard ObjectChecksum.crc32cValue(checksum) != nil, checksum.utf8.count == 8 else {
                throw APIError.validation("Part \(n)'s checksum must be its CRC-32C: base64 of four bytes, big-endian.")
            }
            guard n <= upload.plan.partCount else {
                throw APIError(.partOutOfRange, "This upload has \(upload.plan.partCount) parts; part \(n) is not one of them.")
            }
            if checksums[n] == nil { numbers.append(n) }
            checksums[n] = checksum
        }
        try await jobs.clientUploads.signed(id: upload.id, partChecksums: numbers.compactMap { n in checksums[n].map { (n, $0) } })
        try await jobs.clientUploads.touch(id: upload.id)
        var text = JSONText()
        text.begin(capacity: 600 * numbers.count + 128)
        try appendParts(&text, upload, numbers, checksums: checksums)
        text.end()
        return Responses.json(200, bytes: text.bytes)
    }

    /// A completion's `checksum: {algorithm, value}`: the full-object CRC-32C the client
    /// expects; only an upload whose parts carry checksums can be held to one.
    static func expectedChecksum(_ fields: JSONFields, _ upload: Upload) throws(APIError) -> ObjectChecksum? {
        guard fields.has("checksum") else { return nil }
        let given = try fields.object("checksum")
        try given.only(["algorithm", "value"], in: "checksum.")
        guard try given.string("algorithm") == ObjectChecksum.Algorithm.crc32c.rawValue,
            let value = try given.string("value"), let crc = ObjectChecksum.crc32cValue(value)
        else {
            throw APIError.validation("checksum must be {algorithm: CRC32C, value: base64 of the object's four-byte CRC-32C}.")
        }
        guard upload.record.partChecksum != nil else {
            throw APIError.validation("checksum needs an upload created with checksumAlgorithm CRC32C.")
        }
        return .crc32c(crc)
    }

    /// The parts to complete with (`chosenParts`), each with its checksum where known, and the
    /// object's full CRC-32C made of them; an `expected` one that differs is 400
    /// `checksum_mismatch` (the upload stays open).
    func checkedParts(_ upload: Upload, _ fields: JSONFields, expected: ObjectChecksum?) async throws -> ([RecordedPart], ObjectChecksum?) {
        let held = try await chosenParts(upload, fields)
        guard upload.record.partChecksum != nil else { return (held, nil) }
        let signed = try await jobs.clientUploads.signedChecksums(id: upload.id)
        var parts: [RecordedPart] = [], unknown: Int?
        for part in held {
            // S3's own record of the part's checksum first (AWS lists it); else the one the
            // gateway signed: S3 refused any other bytes on that URL.
            let known = part.checksum ?? signed[part.number].flatMap { $0.count == 1 ? $0.first : nil }
            if known == nil { unknown = unknown ?? part.number }
            parts.append(RecordedPart(number: part.number, size: part.size, etag: part.etag, checksum: known))
        }
        let whole = unknown == nil ? ObjectChecksum.combining(parts) : nil
        guard let expected else { return (parts, whole) }
        guard let whole else {
            throw APIError(
                .partMismatch,
                "Part \(unknown ?? 0) was signed with more than one checksum, so which of them S3 holds is not known; "
                    + "complete without checksum, or abort.")
        }
        guard whole.digest == expected.digest else {
            throw APIError(
                .checksumMismatch,
                "The parts make an object whose CRC-32C is \(whole.value), not \(expected.value); the upload stays open.")
        }
        return (parts, whole)
    }
}

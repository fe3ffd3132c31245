import TransferEngine

/// The presigned part URLs of a client upload, as the create and `/parts` answers list them.
extension UploadsRoutes {
    /// `parts: [{partNumber, url, headers?}]` and `expiresAt`. Each URL signs the part's exact
    /// length and, given in `checksums`, its `x-amz-checksum-crc32c` (then named in `headers`,
    /// which the client must send), and lives no longer than temporary S3 credentials do.
    func appendParts(_ text: inout JSONText, _ upload: Upload, _ numbers: [Int], checksums: [Int: String] = [:]) throws(APIError) {
        let issued = context.now(), presigner = context.presigner
        let expiry = try presigner.lifetime(atMost: context.settings.presignExpiry, now: issued)
        var parts: [UInt8] = [UInt8(ascii: "[")]
        for (index, number) in numbers.enumerated() {
            if index > 0 { parts.append(UInt8(ascii: ",")) }
            parts.append(contentsOf: #"{"partNumber":"#.utf8)
            parts.append(contentsOf: String(number).utf8)
            parts.append(contentsOf: #","url":""#.utf8)
            var signed = [("Content-Length", String(upload.plan.size(ofPart: number)))]
            let checksum = checksums[number]
            if let checksum { signed.append((Self.checksumHeader, checksum)) }
            presigner.appendURL(
                to: &parts, method: "PUT", key: upload.objectKey, expires: expiry, headers: signed,
                query: [("partNumber", String(number)), ("uploadId", upload.s3UploadID)], at: issued)
            parts.append(UInt8(ascii: "\""))
            if let checksum {
                var headers = JSONText()
                headers.begin()
                headers.field(Self.checksumHeader, .string(checksum))
                headers.end()
                parts.append(contentsOf: #","headers":"#.utf8)
                parts += headers.bytes
            }
            parts.append(UInt8(ascii: "}"))
        }
        parts.append(UInt8(ascii: "]"))
        text.rawField("parts", parts)
        text.field("expiresAt", .string(Timestamp.rfc3339(milliseconds: Int64(issued + expiry) * 1000)))
    }
}

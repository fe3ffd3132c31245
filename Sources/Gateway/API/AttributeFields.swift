import TransferEngine

/// The attributes a client may give a new object (content type, cache control, disposition,
/// server-side encryption, user metadata): one reader and one rule for presigned PUTs and
/// POSTs, client-driven uploads, tus and jobs.
enum AttributeFields {
    static let names: Set<String> = ["contentType", "cacheControl", "contentDisposition", "serverSideEncryption", "kmsKeyId", "metadata"]

    static func read(_ fields: JSONFields) throws(APIError) -> ObjectAttributesSpec {
        var spec = ObjectAttributesSpec()
        spec.contentType = try header(fields, "contentType")
        spec.cacheControl = try header(fields, "cacheControl")
        spec.contentDisposition = try header(fields, "contentDisposition")
        if let sse = try fields.string("serverSideEncryption") {
            guard sse == "AES256" || sse == "aws:kms" else { throw APIError.validation("serverSideEncryption must be AES256 or aws:kms.") }
            spec.serverSideEncryption = sse
        }
        if let key = try header(fields, "kmsKeyId") {
            guard spec.serverSideEncryption == "aws:kms" else {
                throw APIError.validation("kmsKeyId goes with serverSideEncryption aws:kms.")
            }
            spec.kmsKeyId = key
        }
        if let metadata = try fields.stringMap("metadata") {
            _ = try HeaderRules.metadataHeaders(metadata)
            spec.metadata = Dictionary(uniqueKeysWithValues: metadata.map { ($0.key.lowercased(), $0.value) })
        }
        return spec
    }

    /// The headers S3 takes these attributes as, in a fixed order: what a presigned PUT signs
    /// and a form POST's policy pins.
    static func headers(_ spec: ObjectAttributesSpec) -> [(String, String)] {
        var out: [(String, String)] = []
        appendHeaders(spec, to: &out)
        return out
    }

    /// The same headers, appended to `out` (a list being built, without an array of its own).
    static func appendHeaders(_ spec: ObjectAttributesSpec, to out: inout [(String, String)]) {
        if let value = spec.contentType { out.append(("Content-Type", value)) }
        if let value = spec.cacheControl { out.append(("Cache-Control", value)) }
        if let value = spec.contentDisposition { out.append(("Content-Disposition", value)) }
        if let value = spec.serverSideEncryption { out.append(("x-amz-server-side-encryption", value)) }
        if let value = spec.kmsKeyId { out.append(("x-amz-server-side-encryption-aws-kms-key-id", value)) }
        for (name, value) in spec.metadata.sorted(by: { $0.key < $1.key }) { out.append(("x-amz-meta-\(name)", value)) }
    }

    private static func header(_ fields: JSONFields, _ name: String) throws(APIError) -> String? {
        guard let value = try fields.string(name) else { return nil }
        try HeaderRules.checkValue(value, field: name)
        return value
    }
}

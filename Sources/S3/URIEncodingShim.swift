import SigV4

/// S3 object keys go on the wire encoded once, `/` kept (no double encoding, unlike other
/// AWS services).
enum URIEncodingShim {
    static func encodePath(_ key: String) -> String {
        URIEncoding.encode(key, encodeSlash: false)
    }
}

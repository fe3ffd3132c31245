import CCrypto

/// A PEM public key (RSA or EC P-256) that verifies JWT signatures: RS256 is RSASSA-PKCS1-v1_5
/// with SHA-256, ES256 is ECDSA P-256 with SHA-256 (RFC 7518 §3.3, §3.4).
public final class PublicKey: @unchecked Sendable {
    // Immutable after init; OpenSSL's EVP_PKEY is safe to use for verification from many threads.
    private let key: OpaquePointer

    public enum Kind: Sendable, Equatable { case rsa, ecP256 }
    public let kind: Kind

    public struct LoadError: Error, CustomStringConvertible {
        public let description: String
        public init(description: String) { self.description = description }
    }

    public init(pem: [UInt8]) throws {
        guard let bio = pem.withUnsafeBytes({ BIO_new_mem_buf($0.baseAddress, Int32($0.count)) }) else {
            throw LoadError(description: "cannot read the key")
        }
        defer { BIO_free(bio) }
        guard let key = PEM_read_bio_PUBKEY(bio, nil, nil, nil) else {
            throw LoadError(description: "not a PEM public key")
        }
        switch EVP_PKEY_get_base_id(key) {
        case EVP_PKEY_RSA:
            guard EVP_PKEY_get_bits(key) >= 2048 else {
                EVP_PKEY_free(key)
                throw LoadError(description: "RSA keys must have at least 2048 bits")
            }
            kind = .rsa
        case EVP_PKEY_EC:
            var name = [CChar](repeating: 0, count: 64)
            var length = 0
            let named = EVP_PKEY_get_group_name(key, &name, name.count, &length) == 1
            let group = String(decoding: name.prefix(length).map { UInt8(bitPattern: $0) }, as: UTF8.self)
            guard named, group == "prime256v1" || group == "P-256" else {
                EVP_PKEY_free(key)
                throw LoadError(description: "EC keys must be on the P-256 curve (ES256)")
            }
            kind = .ecP256
        default:
            EVP_PKEY_free(key)
            throw LoadError(description: "only RSA and EC P-256 keys are supported")
        }
        self.key = key
    }

    deinit { EVP_PKEY_free(key) }

    /// Verifies `signature` over `message`. For EC keys the signature is JOSE's raw `r || s`
    /// (64 bytes), converted here to the DER form OpenSSL expects.
    public func verify(_ signature: [UInt8], of message: [UInt8]) -> Bool {
        let der: [UInt8]
        switch kind {
        case .rsa:
            der = signature
        case .ecP256:
            guard signature.count == 64 else { return false }
            der = Self.derECDSASignature(r: Array(signature[0..<32]), s: Array(signature[32..<64]))
        }
        guard let context = EVP_MD_CTX_new() else { return false }
        defer { EVP_MD_CTX_free(context) }
        guard EVP_DigestVerifyInit_ex(context, nil, "SHA256", nil, nil, key, nil) == 1 else { return false }
        let result = der.withUnsafeBytes { sig in
            message.withUnsafeBytes { msg in
                EVP_DigestVerify(
                    context, sig.baseAddress?.assumingMemoryBound(to: UInt8.self), sig.count,
                    msg.baseAddress?.assumingMemoryBound(to: UInt8.self), msg.count)
            }
        }
        ERR_clear_error()
        return result == 1
    }

    /// ECDSA-Sig-Value ::= SEQUENCE { r INTEGER, s INTEGER } (RFC 3279 §2.2.3), DER.
    public static func derECDSASignature(r: [UInt8], s: [UInt8]) -> [UInt8] {
        func integer(_ bytes: [UInt8]) -> [UInt8] {
            var value = Array(bytes.drop { $0 == 0 })
            if value.isEmpty { value = [0] }
            if value[0] & 0x80 != 0 { value.insert(0, at: 0) }
            return [0x02, UInt8(value.count)] + value
        }
        let body = integer(r) + integer(s)
        return [0x30, UInt8(body.count)] + body
    }
}

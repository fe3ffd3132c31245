import Foundation

/// A public key from a JSON Web Key (RFC 7517): RSA (`n`, `e`, RFC 7518 §6.3.1) or EC P-256
/// (`x`, `y`, §6.2.1). The key is written as the DER SubjectPublicKeyInfo of RFC 5280 and read
/// through the same PEM path as a configured key, so every check of that path applies (RSA of at
/// least 2048 bits, the P-256 curve only).
extension PublicKey {
    public convenience init(jwk: [String: Any]) throws {
        func field(_ name: String) throws -> [UInt8] {
            guard let text = jwk[name] as? String, let bytes = Base64URL.decode(Substring(text)), !bytes.isEmpty else {
                throw LoadError(description: "the JWK has no usable '\(name)'")
            }
            return bytes
        }
        let info: [UInt8]
        switch jwk["kty"] as? String {
        case "RSA":
            let rsaKey = DER.sequence(DER.integer(try field("n")) + DER.integer(try field("e")))
            // rsaEncryption (1.2.840.113549.1.1.1), NULL parameters.
            let algorithm = DER.sequence([0x06, 0x09, 0x2A, 0x86, 0x48, 0x86, 0xF7, 0x0D, 0x01, 0x01, 0x01, 0x05, 0x00])
            info = DER.sequence(algorithm + DER.bitString(rsaKey))
        case "EC":
            guard jwk["crv"] as? String == "P-256" else { throw LoadError(description: "EC keys must be on the P-256 curve (ES256)") }
            let x = try field("x"), y = try field("y")
            guard x.count == 32, y.count == 32 else { throw LoadError(description: "a P-256 point has 32-byte coordinates") }
            // id-ecPublicKey (1.2.840.10045.2.1) on prime256v1 (1.2.840.10045.3.1.7).
            let algorithm = DER.sequence([
                0x06, 0x07, 0x2A, 0x86, 0x48, 0xCE, 0x3D, 0x02, 0x01,
                0x06, 0x08, 0x2A, 0x86, 0x48, 0xCE, 0x3D, 0x03, 0x01, 0x07,
            ])
            info = DER.sequence(algorithm + DER.bitString([0x04] + x + y))
        default:
            throw LoadError(description: "only RSA and EC keys are supported")
        }
        var pem = "-----BEGIN PUBLIC KEY-----\n"
        pem += Data(info).base64EncodedString(options: [.lineLength64Characters, .endLineWithLineFeed])
        pem += "\n-----END PUBLIC KEY-----\n"
        try self.init(pem: Array(pem.utf8))
    }
}

/// Just enough DER (X.690) to write a SubjectPublicKeyInfo.
enum DER {
    static func length(_ count: Int) -> [UInt8] {
        if count < 0x80 { return [UInt8(count)] }
        var bytes: [UInt8] = []
        var rest = count
        while rest > 0 {
            bytes.insert(UInt8(rest & 0xFF), at: 0)
            rest >>= 8
        }
        return [0x80 | UInt8(bytes.count)] + bytes
    }

    static func sequence(_ body: [UInt8]) -> [UInt8] { [0x30] + length(body.count) + body }

    /// A positive INTEGER: leading zeros dropped, one added when the high bit is set.
    static func integer(_ magnitude: [UInt8]) -> [UInt8] {
        var value = Array(magnitude.drop { $0 == 0 })
        if value.isEmpty { value = [0] }
        if value[0] & 0x80 != 0 { value.insert(0, at: 0) }
        return [0x02] + length(value.count) + value
    }

    static func bitString(_ bytes: [UInt8]) -> [UInt8] { [0x03] + length(bytes.count + 1) + [0x00] + bytes }
}

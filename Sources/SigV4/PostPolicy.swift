import Crypto
import Foundation

/// A browser form upload (S3 POST Object with a SigV4 POST policy): the policy document pins the
/// bucket, the exact key, a `content-length-range` and each extra field (content type,
/// cache control, encryption, `x-amz-meta-*`) to its value; it is
/// signed with the same signing key as any request (AWS S3 API Reference, "Browser-Based
/// Uploads Using POST", signature = HMAC-SHA256(signing key, base64(policy))).
public struct PostPolicy: Sendable {
    public let fields: [(String, String)]
    public let policyDocument: String

    public init(
        signer: Signer, bucket: String, key: String, fields extra: [(String, String)], maxSize: Int64,
        expires: Int, time: SigningTime
    ) {
        let credential = "\(signer.credentials.accessKeyID)/\(signer.scope(time))"
        let expiration = Self.iso8601(time.secondsSince1970 + expires)
        var conditions = [
            "{\"bucket\":\(Self.json(bucket))}",
            "{\"key\":\(Self.json(key))}",
            "[\"content-length-range\",0,\(maxSize)]",
            "{\"x-amz-algorithm\":\"\(Signer.algorithm)\"}",
            "{\"x-amz-credential\":\(Self.json(credential))}",
            "{\"x-amz-date\":\"\(time.dateTime)\"}",
        ]
        var fields: [(String, String)] = [("key", key)]
        for (name, value) in extra {
            conditions.append("{\(Self.json(name)):\(Self.json(value))}")
            fields.append((name, value))
        }
        if let token = signer.credentials.sessionToken {
            conditions.append("{\"x-amz-security-token\":\(Self.json(token))}")
        }
        let document = "{\"expiration\":\"\(expiration)\",\"conditions\":[\(conditions.joined(separator: ","))]}"
        let encoded = Data(document.utf8).base64EncodedString()
        fields.append(("x-amz-algorithm", Signer.algorithm))
        fields.append(("x-amz-credential", credential))
        fields.append(("x-amz-date", time.dateTime))
        if let token = signer.credentials.sessionToken { fields.append(("x-amz-security-token", token)) }
        fields.append(("policy", encoded))
        fields.append(("x-amz-signature", Digest.hex(signer.preparedKey(time).authenticate(encoded))))
        self.fields = fields
        self.policyDocument = document
    }

    /// `2026-11-29T12:30:45.000Z`.
    static func iso8601(_ seconds: Int) -> String {
        String(SigningTime(secondsSince1970: seconds).iso8601.dropLast()) + ".000Z"
    }

    /// A JSON string literal.
    static func json(_ text: String) -> String {
        var out = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            default:
                if scalar.value < 0x20 {
                    let hex = String(scalar.value, radix: 16)
                    out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
                } else {
                    out.unicodeScalars.append(scalar)
                }
            }
        }
        return out + "\""
    }
}

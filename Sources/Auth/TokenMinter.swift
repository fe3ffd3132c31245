import Crypto
import Foundation

/// Mints HS256 development tokens (`transfer-gateway token`).
public enum TokenMinter {
    public static func hs256(
        secret: [UInt8], subject: String, issuedAt: Int, ttl: Int, roles: [String] = [],
        issuer: String? = nil, audience: String? = nil
    ) -> String {
        let header = #"{"alg":"HS256","typ":"JWT"}"#
        var claims: [String: Any] = ["sub": subject, "iat": issuedAt, "exp": issuedAt + ttl]
        if !roles.isEmpty { claims["roles"] = roles }
        if let issuer { claims["iss"] = issuer }
        if let audience { claims["aud"] = audience }
        let payload = (try? JSONSerialization.data(withJSONObject: claims, options: [.sortedKeys])) ?? Data()
        let input = Base64URL.encode(Array(header.utf8)) + "." + Base64URL.encode(Array(payload))
        return input + "." + Base64URL.encode(Digest.hmacSHA256(key: secret, input))
    }
}

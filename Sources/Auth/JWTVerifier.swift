import Crypto
import Foundation

/// Verifies bearer JWTs (RFC 7519, JWS compact form of RFC 7515).
///
/// Exactly one algorithm family is accepted, decided by configuration, never by the token:
/// HS256 with a shared secret, or RS256/ES256 with a PEM public key (the key's type picks
/// which). `none` and every other `alg` are refused, so an RS public key can never be used as
/// an HMAC secret. `exp` is required; `nbf`, `iss` and `aud` are honoured; 60 s leeway.
public struct JWTVerifier: Sendable {
    public enum Key: Sendable {
        case hmac([UInt8])
        case publicKey(PublicKey)
    }

    /// The keys configured: at most one HMAC secret and one public key. Each algorithm is
    /// checked only with the key of its own family.
    public let keys: [Key]
    public let issuer: String?
    public let audience: String?
    public let leeway: Int
    private let cache: VerifiedTokenCache?

    public init(keys: [Key], issuer: String? = nil, audience: String? = nil, leeway: Int = 60,
                cache: VerifiedTokenCache? = nil) {
        self.keys = keys
        self.issuer = issuer
        self.audience = audience
        self.leeway = leeway
        self.cache = cache
    }

    public init(key: Key, issuer: String? = nil, audience: String? = nil, leeway: Int = 60) {
        self.init(keys: [key], issuer: issuer, audience: audience, leeway: leeway)
    }

    private var hmacSecret: [UInt8]? {
        for case .hmac(let secret) in keys { return secret }
        return nil
    }

    private var publicKey: PublicKey? {
        for case .publicKey(let key) in keys { return key }
        return nil
    }

    /// Why a token was refused. Descriptions name the rule, never the token.
    public enum Failure: Error, Equatable, Sendable {
        case malformed
        case unsupportedAlgorithm
        case badSignature
        case missingExpiry
        case expired
        case notYetValid
        case wrongIssuer
        case wrongAudience
        case badSubject
    }

    private struct Header: Decodable {
        let alg: String
        let crit: [String]?
    }

    private struct Claims: Decodable {
        let sub: String?
        let exp: Double?
        let nbf: Double?
        let iss: String?
        let aud: Audience?
        let roles: [String]?
    }

    private enum Audience: Decodable {
        case one(String)
        case many([String])

        init(from decoder: any Decoder) throws {
            let container = try decoder.singleValueContainer()
            if let one = try? container.decode(String.self) {
                self = .one(one)
            } else {
                self = .many(try container.decode([String].self))
            }
        }

        func contains(_ value: String) -> Bool {
            switch self {
            case .one(let one): return one == value
            case .many(let many): return many.contains(value)
            }
        }
    }

    /// A remembered token's identity, with the time rules applied again; nil when not cached.
    private func cached(_ token: some StringProtocol, now: Int) throws(Failure) -> Identity? {
        guard let cached = cache?.lookup(token) else { return nil }
        if Double(now) > cached.expiry + Double(leeway) { throw .expired }
        if let nbf = cached.notBefore, Double(now + leeway) < nbf { throw .notYetValid }
        return cached.identity
    }

    /// Only base64url letters and the two dots.
    static func isCompactJWS(_ token: some StringProtocol) -> Bool {
        func allowed(_ byte: UInt8) -> Bool {
            (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A) || (byte >= 0x30 && byte <= 0x39)
                || byte == UInt8(ascii: "-") || byte == UInt8(ascii: "_") || byte == UInt8(ascii: ".")
        }
        if let inPlace = token.utf8.withContiguousStorageIfAvailable({ bytes in
            for byte in bytes where !allowed(byte) { return false }
            return true
        }) {
            return inPlace
        }
        return token.utf8.allSatisfy(allowed)
    }

    /// The identity a valid token names; a token still inside its header value is looked up
    /// without copying it out.
    ///
    /// A hit in the cache is a token equal byte for byte to one that verified, so it is known
    /// to be in the JWS compact alphabet; anything else is checked for it before it is parsed.
    public func verify(_ token: Substring, now: Int) throws(Failure) -> Identity {
        if let identity = try cached(token, now: now) { return identity }
        guard Self.isCompactJWS(token) else { throw .malformed }
        return try verifyUncached(String(token), now: now)
    }

    /// The same, for a token on its own.
    public func verify(_ token: String, now: Int) throws(Failure) -> Identity {
        try verify(token[...], now: now)
    }

    /// Signature, then claims, of a compact-alphabet token not in the cache; remembered once good.
    private func verifyUncached(_ token: String, now: Int) throws(Failure) -> Identity {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, token.utf8.count <= 16 * 1024,
              let headerBytes = Base64URL.decode(parts[0]), let payloadBytes = Base64URL.decode(parts[1]),
              let signature = Base64URL.decode(parts[2]),
              let header = try? JSONDecoder().decode(Header.self, from: Data(headerBytes)) else {
            throw .malformed
        }
        // A critical extension we do not understand must be refused (RFC 7515 §4.1.11).
        if header.crit != nil { throw .unsupportedAlgorithm }
        let signingInput = Array(parts[0].utf8) + [UInt8(ascii: ".")] + Array(parts[1].utf8)
        switch header.alg {
        case "HS256":
            guard let secret = hmacSecret else { throw .unsupportedAlgorithm }
            let expected = Digest.hmacSHA256(key: secret, signingInput)
            guard Digest.constantTimeEqual(expected, signature) else { throw .badSignature }
        case "RS256", "ES256":
            guard let publicKey, publicKey.kind == (header.alg == "RS256" ? .rsa : .ecP256) else {
                throw .unsupportedAlgorithm
            }
            guard publicKey.verify(signature, of: signingInput) else { throw .badSignature }
        default:
            throw .unsupportedAlgorithm
        }
        // Claims are read only once the signature holds.
        guard let claims = try? JSONDecoder().decode(Claims.self, from: Data(payloadBytes)) else { throw .malformed }
        try checkClaims(claims, now: now)
        guard let sub = claims.sub, Identity.isValidID(sub) else { throw .badSubject }
        let identity = Identity(id: sub, isAdmin: claims.roles?.contains("admin") ?? false)
        if let exp = claims.exp { cache?.store(token, .init(identity: identity, expiry: exp, notBefore: claims.nbf)) }
        return identity
    }

    private func checkClaims(_ claims: Claims, now: Int) throws(Failure) {
        guard let exp = claims.exp, exp.isFinite else { throw .missingExpiry }
        if Double(now) > exp + Double(leeway) { throw .expired }
        if let nbf = claims.nbf {
            guard nbf.isFinite else { throw .malformed }
            if Double(now + leeway) < nbf { throw .notYetValid }
        }
        if let issuer, claims.iss != issuer { throw .wrongIssuer }
        if let audience {
            guard let aud = claims.aud, aud.contains(audience) else { throw .wrongAudience }
        }
    }
}

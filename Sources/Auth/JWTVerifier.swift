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
    /// An identity provider's key set (`GATEWAY_JWT_JWKS_URL`): RS256 and ES256 tokens naming a
    /// `kid` are checked with that key.
    public let keySet: KeySet?
    public let issuer: String?
    public let audience: String?
    public let leeway: Int
    public let claims: ClaimNames
    private let cache: VerifiedTokenCache?

    /// Where a token's identity and roles are read (`GATEWAY_JWT_IDENTITY_CLAIM`,
    /// `GATEWAY_JWT_ROLES_CLAIM`, `GATEWAY_JWT_ADMIN_ROLE`).
    public struct ClaimNames: Sendable {
        public var identity = "sub"
        public var roles = "roles"
        public var adminRole = "admin"
        public init() {}
    }

    public init(
        keys: [Key], keySet: KeySet? = nil, issuer: String? = nil, audience: String? = nil, leeway: Int = 60,
        claims: ClaimNames = ClaimNames(), cache: VerifiedTokenCache? = nil
    ) {
        self.keys = keys
        self.keySet = keySet
        self.issuer = issuer
        self.audience = audience
        self.leeway = leeway
        self.claims = claims
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
        /// The token names a `kid` the provider's key set does not have (a fetch was asked for).
        case unknownKey
    }

    private struct Header: Decodable {
        let alg: String
        let kid: String?
        let crit: [String]?
    }

    /// A remembered token's identity, with the time rules applied again; nil when not cached,
    /// or when it was verified with a key set that has been replaced since (it is verified
    /// again: its key may have left the set).
    private func cached(_ token: some StringProtocol, now: Int) throws(Failure) -> Identity? {
        guard let cached = cache?.lookup(token) else { return nil }
        if let generation = cached.keySetGeneration, generation != keySet?.currentGeneration { return nil }
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

    /// The `kid` a token names that the key set lacks: nil without a key set, for a token
    /// already verified, or one whose key is known. Cheap: only the header is read.
    public func unknownKid(of token: Substring) -> String? {
        guard let keySet, cache?.lookup(token) == nil, let dot = token.firstIndex(of: "."),
            let bytes = Base64URL.decode(token[..<dot]),
            let header = try? JSONDecoder().decode(Header.self, from: Data(bytes)),
            let kid = header.kid, keySet.key(kid) == nil
        else { return nil }
        return kid
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
            let header = try? JSONDecoder().decode(Header.self, from: Data(headerBytes))
        else {
            throw .malformed
        }
        // A critical extension we do not understand must be refused (RFC 7515 §4.1.11).
        if header.crit != nil { throw .unsupportedAlgorithm }
        let signingInput = Array(parts[0].utf8) + [UInt8(ascii: ".")] + Array(parts[1].utf8)
        var keySetGeneration: Int?
        switch header.alg {
        case "HS256":
            guard let secret = hmacSecret else { throw .unsupportedAlgorithm }
            let expected = Digest.hmacSHA256(key: secret, signingInput)
            guard Digest.constantTimeEqual(expected, signature) else { throw .badSignature }
        case "RS256", "ES256":
            let key: PublicKey
            (key, keySetGeneration) = try publicKey(for: header, now: now)
            guard key.kind == (header.alg == "RS256" ? .rsa : .ecP256) else { throw .unsupportedAlgorithm }
            guard key.verify(signature, of: signingInput) else { throw .badSignature }
        default:
            throw .unsupportedAlgorithm
        }
        // Claims are read only once the signature holds.
        guard let object = try? JSONDecoder().decode([String: ClaimValue].self, from: Data(payloadBytes)) else { throw .malformed }
        let read = try TokenClaims(object, names: claims)
        try check(read, now: now)
        guard let id = read.identity, Identity.isValidID(id) else { throw .badSubject }
        let identity = Identity(id: id, isAdmin: read.roles.contains(claims.adminRole))
        cache?.store(
            token,
            .init(
                identity: identity, expiry: read.expiry ?? 0, notBefore: read.notBefore,
                keySetGeneration: keySetGeneration))
        return identity
    }

    /// The key a token's signature is checked with: the provider's key of its `kid` when a key
    /// set is configured (a `kid` the set lacks asks for a fetch, and is refused now), else the
    /// configured PEM key. With the key, the generation of the set it came from (nil for the PEM key).
    private func publicKey(for header: Header, now: Int) throws(Failure) -> (PublicKey, Int?) {
        if let keySet, let kid = header.kid {
            if let (key, generation) = keySet.keyWithGeneration(kid) { return (key, generation) }
            keySet.unknownKid(kid, now: now)
            throw .unknownKey
        }
        guard let publicKey else { throw .unsupportedAlgorithm }
        return (publicKey, nil)
    }

    private func check(_ claims: TokenClaims, now: Int) throws(Failure) {
        guard let exp = claims.expiry else { throw .missingExpiry }
        if Double(now) > exp + Double(leeway) { throw .expired }
        if let nbf = claims.notBefore, Double(now + leeway) < nbf { throw .notYetValid }
        if let issuer, claims.issuer != issuer { throw .wrongIssuer }
        if let audience, !claims.audiences.contains(audience) { throw .wrongAudience }
    }
}

/// A claim's JSON value, as decoded (so a number is never taken for a boolean).
enum ClaimValue: Decodable {
    case string(String)
    case bool(Bool)
    case number(Double)
    case array([ClaimValue])
    case object([String: ClaimValue])
    case null

    init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let value = try? container.decode(String.self) {
            self = .string(value)
        } else if let value = try? container.decode(Bool.self) {
            self = .bool(value)
        } else if let value = try? container.decode(Double.self) {
            self = .number(value)
        } else if let value = try? container.decode([ClaimValue].self) {
            self = .array(value)
        } else {
            self = .object(try container.decode([String: ClaimValue].self))
        }
    }

    var string: String? { if case .string(let value) = self { return value } else { return nil } }

    /// A string, or the strings of an array.
    var strings: [String] {
        switch self {
        case .string(let value): return [value]
        case .array(let values): return values.compactMap(\.string)
        default: return []
        }
    }
}

/// The claims the gateway reads from a verified token's payload, by the configured names.
struct TokenClaims {
    var identity: String?
    var roles: [String]
    var expiry: Double?
    var notBefore: Double?
    var issuer: String?
    /// `aud` (a string or an array); with no `aud`, the `client_id` of an access token, as
    /// Cognito's access tokens carry their app client there.
    var audiences: [String]

    init(_ object: [String: ClaimValue], names: JWTVerifier.ClaimNames) throws(JWTVerifier.Failure) {
        func number(_ name: String) throws(JWTVerifier.Failure) -> Double? {
            switch object[name] {
            case nil: return nil
            case .number(let value)? where value.isFinite: return value
            default: throw .malformed
            }
        }
        identity = object[names.identity]?.string
        roles = object[names.roles]?.strings ?? []
        expiry = try number("exp")
        notBefore = try number("nbf")
        issuer = object["iss"]?.string
        if let aud = object["aud"] {
            audiences = aud.strings
        } else if object["token_use"]?.string == "access", let client = object["client_id"]?.string {
            audiences = [client]
        } else {
            audiences = []
        }
    }
}

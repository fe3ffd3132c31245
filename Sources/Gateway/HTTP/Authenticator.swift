import Auth
import Foundation
import HTTPServer

/// Turns `Authorization: Bearer <JWT>` into an `Identity`, or answers 401.
public struct Authenticator: Sendable {
    let verifier: JWTVerifier
    let allowGuestRead: Bool
    let now: @Sendable () -> Int

    public init(verifier: JWTVerifier, allowGuestRead: Bool, now: @escaping @Sendable () -> Int) {
        self.verifier = verifier
        self.allowGuestRead = allowGuestRead
        self.now = now
    }

    /// With an identity provider's key set, a request waits (at most `keyWaitMilliseconds`) for
    /// the first set after start-up, and for the fetch its token's unknown `kid` asks for, so a
    /// key rotated in a moment ago works on the first try. Without one, nothing.
    public func prepare(_ request: HTTPRequest) async {
        // Only requests with a token wait: /healthz and the like answer whatever the provider does.
        guard let keySet = verifier.keySet, request.headers["authorization"] != nil else { return }
        let generation = keySet.generation
        if generation == 0 { return await keySet.waitForSet(after: 0, milliseconds: Self.keyWaitMilliseconds) }
        guard let authorization = try? Self.authorization(request), let space = authorization.utf8.firstIndex(of: UInt8(ascii: " ")),
            let kid = verifier.unknownKid(of: authorization[authorization.utf8.index(after: space)...].trimmingOWS()),
            keySet.unknownKid(kid, now: now()) || keySet.fetchAskedRecently(now: now())
        else { return }
        await keySet.waitForSet(after: generation, milliseconds: Self.keyWaitMilliseconds)
    }

    static let keyWaitMilliseconds = 5_000

    /// The caller's identity. Without a token: a guest where `guestAllowed` (reads of `public/`
    /// with `GATEWAY_ALLOW_GUEST_READ`), else 401. A bad token is always 401, never a guest.
    func identity(of request: HTTPRequest, guestAllowed: Bool = false) throws(APIError) -> Identity {
        guard let authorization = try Self.authorization(request) else {
            if guestAllowed && allowGuestRead { return .guest }
            throw APIError.unauthorized
        }
        // `Bearer` (any case), one space, the token.
        let bytes = authorization.utf8
        guard let space = bytes.firstIndex(of: UInt8(ascii: " ")),
            authorization[..<space].equalsIgnoringASCIICase("bearer")
        else { throw APIError.unauthorized }
        do {
            return try verifier.verify(authorization[bytes.index(after: space)...].trimmingOWS(), now: now())
        } catch {
            throw APIError.invalidToken(error)
        }
    }
}

extension Authenticator {
    /// The one `Authorization` field; two of them are refused (400): which one a proxy or a
    /// cache would honour is anybody's guess.
    static func authorization(_ request: HTTPRequest) throws(APIError) -> String? {
        var found: String?
        for field in request.headers.fields where field.name.equalsIgnoringASCIICase("authorization") {
            if found != nil {
                throw APIError(.duplicateAuthorization, "Send one Authorization header, not several.")
            }
            found = field.value
        }
        return found
    }

    /// Whether the request carries credentials at all (to decide, before reading a body,
    /// whether a guest could be answered).
    func hasToken(_ request: HTTPRequest) -> Bool { request.headers["authorization"] != nil }
}

extension APIError {
    static func invalidToken(_ failure: JWTVerifier.Failure) -> APIError {
        let detail: String
        switch failure {
        case .malformed: detail = "The token is not a well-formed JWT."
        case .unsupportedAlgorithm: detail = "The token's algorithm is not accepted."
        case .badSignature: detail = "The token's signature does not verify."
        case .missingExpiry: detail = "The token has no exp claim."
        case .expired: detail = "The token has expired."
        case .notYetValid: detail = "The token is not valid yet."
        case .wrongIssuer: detail = "The token's issuer is not accepted."
        case .wrongAudience: detail = "The token's audience is not this gateway."
        case .badSubject: detail = "The token's identity claim is missing or not a usable identity id."
        case .unknownKey: detail = "The token's key (kid) is not in the identity provider's key set."
        }
        return APIError(.unauthorized, detail)
    }

    /// Maps an access-policy refusal to its status: 400 bad key, 401 sign in, 403 forbidden.
    static func access(_ denial: AccessDenial) -> APIError {
        switch denial {
        case .invalidKey(let why): return APIError(.invalidKey, "Invalid key: \(why).")
        case .signInRequired: return .unauthorized
        case .forbidden(let why): return APIError(.forbidden, "Forbidden: \(why).")
        }
    }
}

extension AccessPolicy {
    /// `objectKey(for:…)`, its refusal turned into the API's answer (400, 401 or 403).
    func granted(
        _ mode: AccessMode, level: AccessLevel, key: String, identity: Identity,
        target: String? = nil
    ) throws(APIError) -> String {
        do {
            return try objectKey(for: mode, level: level, key: key, identity: identity, targetIdentityID: target)
        } catch {
            throw APIError.access(error)
        }
    }

    /// `prefix(for:…)`, its refusal turned into the API's answer.
    func grantedPrefix(_ mode: AccessMode, level: AccessLevel, identity: Identity, target: String? = nil) throws(APIError) -> String {
        do {
            return try prefix(for: mode, level: level, identity: identity, targetIdentityID: target)
        } catch {
            throw APIError.access(error)
        }
    }
}

import Crypto
import Foundation
import Testing

@testable import Auth

private let secret = Array("test-secret-0123456789abcdef0123456789".utf8)
private let now = 1_800_000_000

private func token(header: String = #"{"alg":"HS256","typ":"JWT"}"#, payload: String, key: [UInt8] = secret) -> String {
    let input = Base64URL.encode(Array(header.utf8)) + "." + Base64URL.encode(Array(payload.utf8))
    return input + "." + Base64URL.encode(Digest.hmacSHA256(key: key, input))
}

private let verifier = JWTVerifier(key: .hmac(secret))

struct BadToken: Sendable, CustomTestStringConvertible {
    let name: String
    let token: String
    let failure: JWTVerifier.Failure
    var testDescription: String { name }
}

private let good = token(payload: #"{"sub":"alice","exp":\#(now + 600)}"#)

let badTokens: [BadToken] = [
    .init(name: "empty", token: "", failure: .malformed),
    .init(name: "two parts", token: "a.b", failure: .malformed),
    .init(name: "not base64url", token: "a*b.c.d", failure: .malformed),
    .init(name: "header not JSON", token: Base64URL.encode(Array("nope".utf8)) + ".e30.sig", failure: .malformed),
    .init(
        name: "alg none",
        token: Base64URL.encode(Array(#"{"alg":"none"}"#.utf8)) + "."
            + Base64URL.encode(Array(#"{"sub":"alice","exp":\#(now + 600)}"#.utf8)) + ".", failure: .unsupportedAlgorithm),
    .init(
        name: "alg None with signature", token: token(header: #"{"alg":"None"}"#, payload: #"{"sub":"alice","exp":\#(now + 600)}"#),
        failure: .unsupportedAlgorithm),
    .init(
        name: "alg HS512", token: token(header: #"{"alg":"HS512"}"#, payload: #"{"sub":"alice","exp":\#(now + 600)}"#),
        failure: .unsupportedAlgorithm),
    .init(
        name: "alg RS256 against an HMAC key", token: token(header: #"{"alg":"RS256"}"#, payload: #"{"sub":"alice","exp":\#(now + 600)}"#),
        failure: .unsupportedAlgorithm),
    .init(
        name: "unknown crit", token: token(header: #"{"alg":"HS256","crit":["exp"]}"#, payload: #"{"sub":"alice","exp":\#(now + 600)}"#),
        failure: .unsupportedAlgorithm),
    .init(
        name: "wrong key", token: token(payload: #"{"sub":"alice","exp":\#(now + 600)}"#, key: Array("another-secret".utf8)),
        failure: .badSignature),
    .init(
        name: "tampered payload",
        token: {
            let parts = good.split(separator: ".")
            return parts[0] + "." + Base64URL.encode(Array(#"{"sub":"admin","exp":\#(now + 600)}"#.utf8)) + "." + parts[2]
        }(), failure: .badSignature),
    .init(
        name: "truncated signature",
        token: {
            let parts = good.split(separator: ".")
            let signature = Base64URL.decode(parts[2]) ?? []
            return parts[0] + "." + parts[1] + "." + Base64URL.encode(Array(signature.dropLast()))
        }(), failure: .badSignature),
    .init(name: "impossible base64url length", token: String(good.dropLast(2)), failure: .malformed),
    .init(name: "missing exp", token: token(payload: #"{"sub":"alice"}"#), failure: .missingExpiry),
    .init(name: "exp as string", token: token(payload: #"{"sub":"alice","exp":"\#(now + 600)"}"#), failure: .malformed),
    .init(name: "exp as boolean", token: token(payload: #"{"sub":"alice","exp":true}"#), failure: .malformed),
    .init(name: "expired beyond leeway", token: token(payload: #"{"sub":"alice","exp":\#(now - 61)}"#), failure: .expired),
    .init(
        name: "not yet valid beyond leeway", token: token(payload: #"{"sub":"alice","exp":\#(now + 600),"nbf":\#(now + 61)}"#),
        failure: .notYetValid),
    .init(name: "no sub", token: token(payload: #"{"exp":\#(now + 600)}"#), failure: .badSubject),
    .init(name: "sub with a slash", token: token(payload: #"{"sub":"../alice","exp":\#(now + 600)}"#), failure: .badSubject),
    .init(name: "sub dot-dot", token: token(payload: #"{"sub":"..","exp":\#(now + 600)}"#), failure: .badSubject),
    .init(name: "sub with a control character", token: token(payload: #"{"sub":"a\u0001b","exp":\#(now + 600)}"#), failure: .badSubject),
    .init(name: "payload not an object", token: token(payload: "[1,2]"), failure: .malformed),
]

@Test(arguments: badTokens)
func badTokensAreRefused(_ bad: BadToken) {
    #expect(throws: bad.failure) { _ = try verifier.verify(bad.token, now: now) }
}

@Test func goodTokenGivesTheIdentity() throws {
    #expect(try verifier.verify(good, now: now) == Identity(id: "alice"))
    let admin = token(payload: #"{"sub":"ops","exp":\#(now + 600),"roles":["reader","admin"]}"#)
    #expect(try verifier.verify(admin, now: now) == Identity(id: "ops", isAdmin: true))
}

@Test func leewayIsSixtySecondsOnBothSides() throws {
    let exp = token(payload: #"{"sub":"alice","exp":\#(now - 60)}"#)
    #expect(try verifier.verify(exp, now: now).id == "alice")
    let nbf = token(payload: #"{"sub":"alice","exp":\#(now + 600),"nbf":\#(now + 60)}"#)
    #expect(try verifier.verify(nbf, now: now).id == "alice")
}

@Test func issuerAndAudienceAreCheckedWhenConfigured() throws {
    let strict = JWTVerifier(key: .hmac(secret), issuer: "https://id.example", audience: "gateway")
    let right = token(payload: #"{"sub":"a","exp":\#(now + 600),"iss":"https://id.example","aud":["x","gateway"]}"#)
    #expect(try strict.verify(right, now: now).id == "a")
    let wrongIss = token(payload: #"{"sub":"a","exp":\#(now + 600),"iss":"https://evil.example","aud":"gateway"}"#)
    #expect(throws: JWTVerifier.Failure.wrongIssuer) { _ = try strict.verify(wrongIss, now: now) }
    let noIss = token(payload: #"{"sub":"a","exp":\#(now + 600),"aud":"gateway"}"#)
    #expect(throws: JWTVerifier.Failure.wrongIssuer) { _ = try strict.verify(noIss, now: now) }
    let wrongAud = token(payload: #"{"sub":"a","exp":\#(now + 600),"iss":"https://id.example","aud":"other"}"#)
    #expect(throws: JWTVerifier.Failure.wrongAudience) { _ = try strict.verify(wrongAud, now: now) }
}

@Test func mintedTokensVerify() throws {
    let minted = TokenMinter.hs256(secret: secret, subject: "dev", issuedAt: now, ttl: 3600, roles: ["admin"])
    #expect(try verifier.verify(minted, now: now + 10) == Identity(id: "dev", isAdmin: true))
    #expect(throws: JWTVerifier.Failure.expired) { _ = try verifier.verify(minted, now: now + 3600 + 61) }
}

@Test func aLookalikeOfACachedTokenIsNotAccepted() throws {
    let cached = JWTVerifier(keys: [.hmac(secret)], cache: VerifiedTokenCache())
    #expect(try cached.verify(good, now: now).id == "alice")
    // Every ASCII letter K replaced by U+212A KELVIN SIGN, which Swift's == equates with K.
    let lookalike = good.replacingOccurrences(of: "K", with: "\u{212A}")
    if lookalike != good || good.contains("K") {
        #expect(throws: JWTVerifier.Failure.malformed) { _ = try cached.verify(lookalike, now: now) }
    }
    #expect(throws: JWTVerifier.Failure.malformed) { _ = try cached.verify(good + "\u{0}", now: now) }
}

@Test func tokensSharingACacheSlotEvictEachOtherAndStayApart() throws {
    // One slot: every token lands in it, so each verification replaces the last one's entry.
    let cached = JWTVerifier(keys: [.hmac(secret)], cache: VerifiedTokenCache(capacity: 1))
    let bob = token(payload: #"{"sub":"bob","exp":\#(now + 600)}"#)
    for _ in 0..<3 {
        #expect(try cached.verify(good, now: now).id == "alice")
        #expect(try cached.verify(bob, now: now).id == "bob")
    }
    // A cached token still obeys the clock, and a tampered one is not matched by the slot.
    #expect(throws: JWTVerifier.Failure.expired) { _ = try cached.verify(bob, now: now + 600 + 61) }
    let dot = bob.lastIndex(of: ".")!
    let first = bob[bob.index(after: dot)]
    let tampered = String(bob[...dot]) + (first == "A" ? "B" : "A") + bob[bob.index(dot, offsetBy: 2)...]
    #expect(throws: JWTVerifier.Failure.badSignature) { _ = try cached.verify(tampered, now: now) }
}

@Test func aTokenInsideItsHeaderValueVerifiesLikeACopy() throws {
    let cached = JWTVerifier(keys: [.hmac(secret)], cache: VerifiedTokenCache())
    let header = "Bearer " + good + "  "
    let token = header.dropFirst(7).dropLast(2)
    #expect(try cached.verify(token, now: now).id == "alice")  // a miss: verified, then cached
    #expect(try cached.verify(token, now: now).id == "alice")  // a hit
    #expect(throws: JWTVerifier.Failure.expired) { _ = try cached.verify(token, now: now + 600 + 61) }
    #expect(throws: JWTVerifier.Failure.malformed) { _ = try cached.verify(header.dropFirst(6), now: now) }
}

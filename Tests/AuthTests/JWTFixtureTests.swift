import Crypto
import Foundation
import Testing

@testable import Auth

/// RFC 7515 Appendix A examples and generated RS256/ES256 tokens (Fixtures/jwt-fixtures.json;
/// provenance in Fixtures/PROVENANCE.md).
struct JWTFixtures: Decodable {
    struct RFC: Decodable {
        struct A1: Decodable { let jws: String; let k: String; let exp: Int }
        struct Signed: Decodable { let jws: String; let publicKeyPEM: String }
        let a1: A1
        let a2: Signed
        let a3: Signed
    }
    struct Generated: Decodable {
        let rsaPublicKeyPEM: String
        let ecPublicKeyPEM: String
        let rs256: String
        let es256: String
        let rs256Admin: String
        let hsWithRSAPublicKey: String
    }
    let rfc7515: RFC
    let generated: Generated

    static let loaded: JWTFixtures = {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures/jwt-fixtures.json")
        guard let data = try? Data(contentsOf: url), let fixtures = try? JSONDecoder().decode(JWTFixtures.self, from: data) else {
            preconditionFailure("cannot read \(url.path)")
        }
        return fixtures
    }()
}

private let fixtures = JWTFixtures.loaded

/// The RFC examples have no `sub`: a verifier that accepted the signature goes on to refuse the
/// subject, one that did not refuses the signature. Verified before the 2011 expiry.
private let beforeRFCExpiry = 1_300_819_000

private func flipLastSignatureCharacter(_ jws: String) -> String {
    String(jws.dropLast()) + (jws.hasSuffix("A") ? "B" : "A")
}

@Test func rfc7515A1HS256() throws {
    let a1 = fixtures.rfc7515.a1
    let secret = try #require(Base64URL.decode(Substring(a1.k)))
    let verifier = JWTVerifier(key: .hmac(secret))
    #expect(throws: JWTVerifier.Failure.badSubject) { _ = try verifier.verify(a1.jws, now: beforeRFCExpiry) }
    #expect(throws: JWTVerifier.Failure.badSignature) { _ = try verifier.verify(flipLastSignatureCharacter(a1.jws), now: beforeRFCExpiry) }
    #expect(throws: JWTVerifier.Failure.expired) { _ = try verifier.verify(a1.jws, now: a1.exp + 61) }
}

@Test func rfc7515A2RS256() throws {
    let key = try PublicKey(pem: Array(fixtures.rfc7515.a2.publicKeyPEM.utf8))
    #expect(key.kind == .rsa)
    let verifier = JWTVerifier(key: .publicKey(key))
    #expect(throws: JWTVerifier.Failure.badSubject) { _ = try verifier.verify(fixtures.rfc7515.a2.jws, now: beforeRFCExpiry) }
    #expect(throws: JWTVerifier.Failure.badSignature) {
        _ = try verifier.verify(flipLastSignatureCharacter(fixtures.rfc7515.a2.jws), now: beforeRFCExpiry)
    }
}

@Test func rfc7515A3ES256() throws {
    let key = try PublicKey(pem: Array(fixtures.rfc7515.a3.publicKeyPEM.utf8))
    #expect(key.kind == .ecP256)
    let verifier = JWTVerifier(key: .publicKey(key))
    #expect(throws: JWTVerifier.Failure.badSubject) { _ = try verifier.verify(fixtures.rfc7515.a3.jws, now: beforeRFCExpiry) }
    #expect(throws: JWTVerifier.Failure.badSignature) {
        _ = try verifier.verify(flipLastSignatureCharacter(fixtures.rfc7515.a3.jws), now: beforeRFCExpiry)
    }
}

@Test func generatedRS256AndES256Tokens() throws {
    let rsa = JWTVerifier(key: .publicKey(try PublicKey(pem: Array(fixtures.generated.rsaPublicKeyPEM.utf8))))
    #expect(try rsa.verify(fixtures.generated.rs256, now: 1_800_000_000) == Identity(id: "alice"))
    #expect(try rsa.verify(fixtures.generated.rs256Admin, now: 1_800_000_000).isAdmin)
    let ec = JWTVerifier(key: .publicKey(try PublicKey(pem: Array(fixtures.generated.ecPublicKeyPEM.utf8))))
    #expect(try ec.verify(fixtures.generated.es256, now: 1_800_000_000) == Identity(id: "alice"))
    // An RS256 token is not accepted by an EC key, nor the other way round.
    #expect(throws: JWTVerifier.Failure.unsupportedAlgorithm) { _ = try ec.verify(fixtures.generated.rs256, now: 1_800_000_000) }
    #expect(throws: JWTVerifier.Failure.unsupportedAlgorithm) { _ = try rsa.verify(fixtures.generated.es256, now: 1_800_000_000) }
}

@Test func hsRSConfusionIsRefused() throws {
    // HS256 signed with the RSA public key's PEM as the HMAC secret: the classic key confusion.
    let rsaOnly = JWTVerifier(key: .publicKey(try PublicKey(pem: Array(fixtures.generated.rsaPublicKeyPEM.utf8))))
    #expect(throws: JWTVerifier.Failure.unsupportedAlgorithm) {
        _ = try rsaOnly.verify(fixtures.generated.hsWithRSAPublicKey, now: 1_800_000_000)
    }
    // With both an HMAC secret and the RSA key configured, HS256 is checked with the secret only.
    let both = JWTVerifier(keys: [
        .hmac(Array("a-different-secret-of-32-bytes!!".utf8)),
        .publicKey(try PublicKey(pem: Array(fixtures.generated.rsaPublicKeyPEM.utf8))),
    ])
    #expect(throws: JWTVerifier.Failure.badSignature) {
        _ = try both.verify(fixtures.generated.hsWithRSAPublicKey, now: 1_800_000_000)
    }
}

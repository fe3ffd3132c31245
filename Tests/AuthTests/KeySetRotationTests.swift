import Crypto
import Foundation
import Testing

@testable import Auth

/// A token verified with a provider's key (`GATEWAY_JWT_JWKS_URL`) is remembered by the
/// verified-token cache; once the key set is replaced, a token whose `kid` left it is refused on
/// its next request, and one whose `kid` stayed keeps working.
@Suite struct KeySetRotationTests {
    /// An RSA key made for the test by the `openssl` CLI (no private key is kept in the
    /// repository), and RS256 tokens signed with it.
    struct Signer {
        let directory: URL
        let publicKey: PublicKey

        init() throws {
            directory = FileManager.default.temporaryDirectory.appendingPathComponent("keyset-rotation-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            try Self.openssl([
                "genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048", "-out",
                directory.appendingPathComponent("key.pem").path,
            ])
            try Self.openssl([
                "pkey", "-in", directory.appendingPathComponent("key.pem").path, "-pubout", "-out",
                directory.appendingPathComponent("public.pem").path,
            ])
            publicKey = try PublicKey(pem: Array(try Data(contentsOf: directory.appendingPathComponent("public.pem"))))
        }

        @discardableResult
        static func openssl(_ arguments: [String], input: URL? = nil) throws -> Data {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            process.arguments = ["openssl"] + arguments
            let output = Pipe()
            process.standardOutput = output
            process.standardError = FileHandle.nullDevice
            try process.run()
            let data = output.fileHandleForReading.readDataToEndOfFile()
            process.waitUntilExit()
            guard process.terminationStatus == 0 else { throw PublicKey.LoadError(description: "openssl \(arguments[0]) failed") }
            return data
        }

        func token(kid: String, subject: String, expiry: Int) throws -> String {
            let header = Base64URL.encode(Array(#"{"alg":"RS256","typ":"JWT","kid":"\#(kid)"}"#.utf8))
            let payload = Base64URL.encode(Array(#"{"sub":"\#(subject)","exp":\#(expiry)}"#.utf8))
            let input = directory.appendingPathComponent("input-\(UUID().uuidString)")
            try Data((header + "." + payload).utf8).write(to: input)
            let signature = try Self.openssl(["dgst", "-sha256", "-sign", directory.appendingPathComponent("key.pem").path, input.path])
            return header + "." + payload + "." + Base64URL.encode(Array(signature))
        }
    }

    let now = 1_800_000_000

    @Test func aTokenWhoseKidLeftTheSetIsRefusedAndOneWhoseKidStayedIsNot() throws {
        let signer = try Signer()
        defer { try? FileManager.default.removeItem(at: signer.directory) }
        let keySet = KeySet()
        keySet.replace(with: ["old": signer.publicKey, "kept": signer.publicKey], expiresAt: now + 300)
        let cache = VerifiedTokenCache()
        let verifier = JWTVerifier(keys: [], keySet: keySet, cache: cache)
        let leaving = try signer.token(kid: "old", subject: "alice", expiry: now + 600)
        let staying = try signer.token(kid: "kept", subject: "bob", expiry: now + 600)
        #expect(try verifier.verify(leaving, now: now).id == "alice")
        #expect(try verifier.verify(staying, now: now).id == "bob")
        #expect(cache.lookup(leaving) != nil, "remembered")
        #expect(try verifier.verify(leaving, now: now + 1).id == "alice", "a hit before the set changes")

        keySet.replace(with: ["kept": signer.publicKey, "new": signer.publicKey], expiresAt: now + 600)
        #expect(throws: JWTVerifier.Failure.unknownKey) { _ = try verifier.verify(leaving, now: now + 2) }
        #expect(throws: JWTVerifier.Failure.unknownKey, "and on every request after") { _ = try verifier.verify(leaving, now: now + 3) }
        #expect(try verifier.verify(staying, now: now + 2).id == "bob")
        #expect(try verifier.verify(staying, now: now + 3).id == "bob", "verified again once, then a hit")
    }

    @Test func aSetFetchedAgainWithTheSameKeysChangesNothing() throws {
        let signer = try Signer()
        defer { try? FileManager.default.removeItem(at: signer.directory) }
        let keySet = KeySet()
        keySet.replace(with: ["k": signer.publicKey], expiresAt: now + 300)
        let verifier = JWTVerifier(keys: [], keySet: keySet, cache: VerifiedTokenCache())
        let token = try signer.token(kid: "k", subject: "carol", expiry: now + 600)
        #expect(try verifier.verify(token, now: now).id == "carol")
        for round in 1...3 {
            keySet.replace(with: ["k": signer.publicKey], expiresAt: now + 300 * round)
            #expect(try verifier.verify(token, now: now + round).id == "carol")
        }
        // The key of the kid replaced by another key: the token no longer verifies.
        let other = try Signer()
        defer { try? FileManager.default.removeItem(at: other.directory) }
        keySet.replace(with: ["k": other.publicKey], expiresAt: now + 1200)
        #expect(throws: JWTVerifier.Failure.badSignature) { _ = try verifier.verify(token, now: now + 10) }
    }
}

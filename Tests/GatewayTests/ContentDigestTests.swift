import Testing
import TransferEngine

@testable import Gateway

/// RFC 9530 `Content-Digest` as the upload-job routes read it: a Structured Field Dictionary
/// (RFC 8941 §3.2), the algorithms the gateway verifies, the rest ignored.
@Suite struct ContentDigestTests {
    /// sha-256 of "hello world" and CRC-32C of it, base64.
    static let sha = "uU0nuZNNPgilLlLX2n2r+sSE7+N6U4DukIj3rOLvzek="
    static let crc = "yZRlqg=="

    @Test func theVerifiedAlgorithmsAreReadAndSHA256IsPreferred() throws {
        #expect(try ContentDigest.parse("sha-256=:\(Self.sha):") == ObjectChecksum(algorithm: .sha256, value: Self.sha))
        #expect(try ContentDigest.parse("crc32c=:\(Self.crc):") == ObjectChecksum(algorithm: .crc32c, value: Self.crc))
        #expect(try ContentDigest.parse("crc32c=:\(Self.crc):, sha-256=:\(Self.sha):")?.algorithm == .sha256)
        #expect(try ContentDigest.parse("  crc32c=:\(Self.crc):;note=1 ,\tunixsum=30637")?.algorithm == .crc32c)
    }

    /// Unknown and deprecated keys are ignored, whatever item they carry (RFC 9530 §5).
    @Test(arguments: [
        "sha-512=:YWJj:", "md5=:HUXZLQLMuI/KZ5KDcJPcOA==:", "unixsum=30637", "id-sha-256=\"x, y\"", "foo", "foo=?1",
        "foo=tok/en:1", "foo=-1.5",
    ])
    func algorithmsNotVerifiedAreIgnored(_ field: String) throws {
        #expect(try ContentDigest.parse(field) == nil)
    }

    /// Each malformed field, refused (400 `invalid_content_digest` at the route).
    @Test(arguments: [
        "", "   ", "sha-256", "sha-256=", "sha-256=abc", "sha-256=:YWJj:", "crc32c=:AAAAAAAA:", "crc32c=:yZRlqg==",
        "crc32c=:yZR!qg==:", "Sha-256=:\(sha):", "sha-256=:\(sha):,", "sha-256=:\(sha): crc32c=:\(crc):", "foo=(a b)",
        "foo=\"open", "foo=\"bad\\escape\"", "foo=?2", ",crc32c=:\(crc):", "crc32c=:\(crc):;=1",
    ])
    func malformedFieldsAreRefused(_ field: String) {
        #expect(throws: ContentDigest.Invalid.self) { try ContentDigest.parse(field) }
    }

    @Test func aLaterMemberReplacesAnEarlierOneOfTheSameKey() throws {
        #expect(try ContentDigest.parse("crc32c=:AAAAAA==:, crc32c=:\(Self.crc):")?.value == Self.crc)
    }

    @Test func reprDigestIsTheRegistryKeyAndAByteSequence() {
        #expect(ChecksumFields.reprDigest(ObjectChecksum(algorithm: .crc32c, value: Self.crc)) == "crc32c=:\(Self.crc):")
        #expect(ChecksumFields.reprDigest(ObjectChecksum(algorithm: .sha256, value: Self.sha)) == "sha-256=:\(Self.sha):")
    }
}

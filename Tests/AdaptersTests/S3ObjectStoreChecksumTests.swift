import Testing
import TransferEngine

@testable import Adapters
@testable import S3

/// Which checksum a HEAD with `x-amz-checksum-mode: ENABLED` gives for the whole object: S3's
/// `FULL_OBJECT` ones (and a typeless single PUT's, as SeaweedFS answers), never a
/// `COMPOSITE` checksum of part checksums.
@Suite struct S3ObjectStoreChecksumTests {
    static let sha = "uU0nuZNNPgilLlLX2n2r+sSE7+N6U4DukIj3rOLvzek="

    static func head(crc: String? = nil, sha: String? = nil, type: String? = nil) -> ObjectHead {
        ObjectHead(
            size: 11, etag: "\"e\"", contentType: nil, lastModified: nil, metadata: [:], cacheControl: nil,
            contentDisposition: nil, serverSideEncryption: nil, kmsKeyId: nil, checksumCRC32C: crc, checksumSHA256: sha,
            checksumType: type)
    }

    @Test func wholeObjectChecksumsAreTaken() {
        #expect(S3ObjectStore.fullObject(Self.head(crc: "yZRlqg==", type: "FULL_OBJECT")) == .crc32c(0xC994_65AA))
        #expect(S3ObjectStore.fullObject(Self.head(crc: "yZRlqg==")) == ObjectChecksum(algorithm: .crc32c, value: "yZRlqg=="))
        #expect(S3ObjectStore.fullObject(Self.head(sha: Self.sha, type: "FULL_OBJECT"))?.algorithm == .sha256)
        #expect(S3ObjectStore.fullObject(Self.head(crc: "yZRlqg==", sha: Self.sha))?.algorithm == .crc32c)
    }

    @Test(arguments: [
        head(crc: "GyDvHg==-1", type: "COMPOSITE"), head(crc: "GyDvHg==-3"), head(crc: "yZRlqg==", type: "COMPOSITE"),
        head(crc: "not base64"), head(crc: "AAAAAAAA"), head(sha: "YWJj"), head(),
    ])
    func partChecksumsAndOddValuesAreNot(_ head: ObjectHead) {
        #expect(S3ObjectStore.fullObject(head) == nil)
    }
}

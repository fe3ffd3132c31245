import Crypto
import Foundation
import Testing

@testable import TransferGatewayClient

extension JobTableTests {
    /// The client library's part checksums against SeaweedFS, with `scripts/faultproxy.py` as
    /// the presigned URLs' S3 endpoint: one bit of one part's body flipped on the way, S3
    /// refusing that part (400 `BadDigest`), the client sending it again, and the object whole.
    @Suite struct ChecksumClientLiveTests {
        static let mib = 1 << 20

        @Test func aPartChangedOnTheWayIsRefusedByS3AndSentAgain() async throws {
            let environment = ProcessInfo.processInfo.environment
            let s3 = try #require(URL(string: environment["GATEWAY_S3_ENDPOINT"] ?? ""))
            let proxy = try FaultProxy(
                ["--match", "partNumber=", "--method", "PUT", "--flip-first", "1"], upstream: "\(s3.host ?? "127.0.0.1"):\(s3.port ?? 80)")
            let gateway = try LiveGateway { $0.s3PublicEndpoint = "http://127.0.0.1:\(proxy.port)" }
            let rig = try TransferClientLiveTests.Rig(gateway: gateway)
            let key = "client/flip-\(UUID().uuidString).bin"
            let (source, bytes) = try rig.file("flip.bin", bytes: 11 * Self.mib + 123, seed: 9)
            let client = try rig.client {
                $0.smallFileThreshold = Int64(Self.mib)
                $0.partSize = Int64(5 * Self.mib)
            }
            let result = try await client.upload(file: source, to: .private(key)).result()
            let expected = Digest.crc32cBase64(Array(bytes).withUnsafeBytes { Digest.crc32c($0) })
            #expect(result.checksum == TransferChecksum(algorithm: "CRC32C", value: expected))

            let stats = try await proxy.stats()
            #expect(stats["flips"] == 1, "\(stats)")
            // Three parts stored once each: the flipped PUT stored nothing (S3 refused it).
            let parts = try await proxy.parts()
            #expect(parts.count == 3 && parts.allSatisfy { $0.stored == 1 }, "\(parts)")
            #expect(stats["requests"] ?? 0 >= 4, "the refused part was sent again: \(stats)")

            let objectKey = try #require(result.objectKey)
            let stored = try await gateway.configuration.makeS3Client().getObject(key: objectKey, sink: .memory(limit: 16 << 20)).body
            #expect(Digest.sha256(stored) == Digest.sha256(Array(bytes)), "the object's SHA-256 is the file's")
            let properties = try await gateway.request(
                "GET", "/v1/objects/properties?accessLevel=private&key=\(key)", token: rig.token)
            #expect((properties.json["checksum"] as? [String: String])?["value"] == expected, "\(properties.json)")
            await rig.stop()
            withExtendedLifetime(proxy) {}
        }

    }
}

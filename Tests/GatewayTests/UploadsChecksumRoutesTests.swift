import Crypto
import Foundation
import TestSupport
import Testing
import TransferEngine

@testable import Gateway

/// Client uploads created with `checksumAlgorithm: CRC32C`: part URLs sign each part's
/// checksum, and the completion checks the whole object's against the one the client expects.
@Suite struct UploadsChecksumRoutesTests {
    static let partSize = 5 * 1024 * 1024
    static func crc(_ bytes: [UInt8]) -> String { Digest.crc32cBase64(bytes.withUnsafeBytes { Digest.crc32c($0) }) }

    /// A checksummed upload of two parts (5 MiB and 100 bytes) for alice, its parts in S3 as
    /// the client sent them on URLs signed with their checksums; its id and the object's bytes.
    static func uploaded(_ rig: RouteRig, key: String) async throws -> (id: String, bytes: [UInt8]) {
        let bytes = (0..<(partSize + 100)).map { UInt8(truncatingIfNeeded: $0 &* 13) }
        let created = try await rig.send(
            "POST", "/v1/uploads", as: "alice",
            json: ["accessLevel": "private", "key": key, "size": bytes.count, "checksumAlgorithm": "CRC32C"])
        #expect(created.status == 201 && created.json["checksumAlgorithm"] as? String == "CRC32C", "\(created.json)")
        #expect((created.json["parts"] as? [Any])?.isEmpty == true, "URLs come from /parts, with checksums")
        let id = try #require(created.json["uploadId"] as? String)
        let halves = [Array(bytes[..<partSize]), Array(bytes[partSize...])]
        let signed = try await rig.send(
            "POST", "/v1/uploads/\(id)/parts", as: "alice",
            json: ["parts": [["partNumber": 1, "checksum": crc(halves[0])], ["partNumber": 2, "checksum": crc(halves[1])]]])
        #expect(signed.status == 200, "\(signed.json)")
        let parts = try #require(signed.json["parts"] as? [[String: Any]])
        #expect((parts[0]["url"] as? String)?.contains("h-x-amz-checksum-crc32c=\(crc(halves[0]))") == true)
        #expect((parts[1]["headers"] as? [String: String]) == ["x-amz-checksum-crc32c": crc(halves[1])])
        let s3ID = try #require(try await rig.clientUploads.upload(id: id)?.s3UploadID)
        for (index, half) in halves.enumerated() {
            _ = try await rig.objects.uploadPart(
                key: "private/alice/\(key)", uploadID: s3ID, part: index + 1, data: .bytes(half), checksum: .crc32c)
        }
        return (id, bytes)
    }

    @Test func theExpectedChecksumCompletesAndIsReported() async throws {
        let rig = try RouteRig()
        let (id, bytes) = try await Self.uploaded(rig, key: "ok.bin")
        let done = try await rig.send(
            "POST", "/v1/uploads/\(id)/complete", as: "alice", json: ["checksum": ["algorithm": "CRC32C", "value": Self.crc(bytes)]])
        #expect(done.status == 200 && done.json["checksum"] as? [String: String] == ["algorithm": "CRC32C", "value": Self.crc(bytes)])
        let shown = try await rig.send("GET", "/v1/uploads/\(id)", as: "alice")
        #expect((shown.json["checksum"] as? [String: String])?["value"] == Self.crc(bytes), "\(shown.json)")
        let properties = try await rig.send("GET", "/v1/objects/properties?accessLevel=private&key=ok.bin", as: "alice")
        #expect((properties.json["checksum"] as? [String: String])?["value"] == Self.crc(bytes), "\(properties.json)")
    }

    @Test func anotherExpectedChecksumLeavesTheUploadOpen() async throws {
        let rig = try RouteRig()
        let (id, bytes) = try await Self.uploaded(rig, key: "no.bin")
        let refused = try await rig.send(
            "POST", "/v1/uploads/\(id)/complete", as: "alice", json: ["checksum": ["algorithm": "CRC32C", "value": Self.crc([1])]])
        #expect(refused.status == 400 && refused.code == "checksum_mismatch", "\(refused.json)")
        #expect(try await rig.send("GET", "/v1/uploads/\(id)", as: "alice").json["state"] as? String == "open")
        #expect(rig.objects.object("private/alice/no.bin") == nil)
        let done = try await rig.send("POST", "/v1/uploads/\(id)/complete", as: "alice", json: [:])
        #expect(done.status == 200 && (done.json["checksum"] as? [String: String])?["value"] == Self.crc(bytes))
    }

    @Test func checksumsAreAskedForInTheirShapeAndOnlyWhereTheyCanBeKept() async throws {
        let rig = try RouteRig()
        let created = try await rig.send(
            "POST", "/v1/uploads", as: "alice", json: ["accessLevel": "private", "key": "c.bin", "size": 10, "checksumAlgorithm": "CRC32C"])
        let id = try #require(created.json["uploadId"] as? String)
        let byNumber = try await rig.send("POST", "/v1/uploads/\(id)/parts", as: "alice", json: ["partNumbers": [1]])
        #expect(byNumber.status == 400 && byNumber.code == "validation_failed", "a checksummed upload's URLs need checksums")
        for bad in ["AAAA", "AAAAAAA=", "not base64", ""] {
            let refused = try await rig.send(
                "POST", "/v1/uploads/\(id)/parts", as: "alice", json: ["parts": [["partNumber": 1, "checksum": bad]]])
            #expect(refused.status == 400 && refused.code == "validation_failed", "\(bad)")
        }
        let beyond = try await rig.send(
            "POST", "/v1/uploads/\(id)/parts", as: "alice", json: ["parts": [["partNumber": 2, "checksum": "AAAAAA=="]]])
        #expect(beyond.status == 409 && beyond.code == "part_out_of_range")
        let sha = try await rig.send(
            "POST", "/v1/uploads", as: "alice", json: ["accessLevel": "private", "key": "s.bin", "size": 10, "checksumAlgorithm": "SHA256"])
        #expect(sha.status == 400 && sha.code == "validation_failed")

        let plain = try await rig.send("POST", "/v1/uploads", as: "alice", json: ["accessLevel": "private", "key": "p.bin", "size": 10])
        #expect(plain.json["checksumAlgorithm"] is NSNull)
        let plainID = try #require(plain.json["uploadId"] as? String)
        let signed = try await rig.send(
            "POST", "/v1/uploads/\(plainID)/parts", as: "alice", json: ["parts": [["partNumber": 1, "checksum": "AAAAAA=="]]])
        #expect(signed.status == 400 && signed.code == "validation_failed")
        let expecting = try await rig.send(
            "POST", "/v1/uploads/\(plainID)/complete", as: "alice", json: ["checksum": ["algorithm": "CRC32C", "value": "AAAAAA=="]])
        #expect(expecting.status == 400 && expecting.code == "validation_failed", "no part checksums, nothing to hold it to")
        #expect(try await rig.send("GET", "/v1/uploads/\(plainID)", as: "alice").json["state"] as? String == "open")
    }
}

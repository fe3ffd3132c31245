import Crypto
import Foundation
import TestSupport
import Testing
import TransferEngine

@testable import Gateway

/// Whole-object checksums through the real router over the twins: `checksum` on upload jobs,
/// properties and downloads, `Repr-Digest` on data answers, and `Content-Digest` on an upload
/// job's PUT and PATCH (nothing of a request that does not match is committed).
@Suite struct ChecksumRoutesTests {
    static func crc(_ bytes: [UInt8]) -> String { Digest.crc32cBase64(bytes.withUnsafeBytes { Digest.crc32c($0) }) }
    static func sha(_ bytes: [UInt8]) -> String { Data(Digest.sha256(bytes)).base64EncodedString() }
    static func octets(_ count: Int, seed: UInt8 = 7) -> [UInt8] { (0..<count).map { UInt8(truncatingIfNeeded: $0 &* 31) ^ seed } }

    /// A new upload job of `size` bytes for alice; its id.
    static func upload(_ rig: RouteRig, _ key: String, size: Int) async throws -> String {
        let created = try await rig.send(
            "POST", "/v1/jobs", as: "alice", json: ["type": "upload", "accessLevel": "private", "key": key, "size": size])
        return try #require(created.json["id"] as? String)
    }

    static func patch(_ rig: RouteRig, _ id: String, at offset: Int, _ body: [UInt8], digest: String?) async throws -> RouteRig.Answer {
        var headers = [("Upload-Offset", String(offset)), ("Content-Type", "application/offset+octet-stream")]
        if let digest { headers.append(("Content-Digest", digest)) }
        return try await rig.send("PATCH", "/v1/jobs/\(id)/data", as: "alice", body: body, headers: headers)
    }

    static func checksum(_ json: [String: Any]) -> [String: String]? { json["checksum"] as? [String: String] }

    @Test func anUploadJobsObjectCarriesItsCRC32CInTheJobPropertiesAndDownloads() async throws {
        let rig = try RouteRig()
        let bytes = Array("hello world".utf8)
        let id = try await Self.upload(rig, "c.bin", size: 11)
        let pending = try await rig.send("GET", "/v1/jobs/\(id)", as: "alice")
        #expect(pending.json.keys.contains("checksum") && pending.json["checksum"] is NSNull, "\(pending.json)")
        let put = try await rig.send("PUT", "/v1/jobs/\(id)/data", as: "alice", body: bytes)
        #expect(Self.checksum(put.json) == ["algorithm": "CRC32C", "value": "yZRlqg=="], "\(put.json)")
        let shown = try await rig.send("GET", "/v1/objects/properties?accessLevel=private&key=c.bin", as: "alice")
        #expect(Self.checksum(shown.json) == ["algorithm": "CRC32C", "value": "yZRlqg=="], "\(shown.json)")

        let download = try await rig.send(
            "POST", "/v1/jobs", as: "alice", json: ["type": "download", "source": ["accessLevel": "private", "key": "c.bin"]])
        #expect(Self.checksum(download.json)?["value"] == "yZRlqg==", "\(download.json)")
        let downloadID = try #require(download.json["id"] as? String)
        let whole = try await rig.send("GET", "/v1/jobs/\(downloadID)/data", as: "alice")
        #expect(whole.status == 200 && whole.headers["repr-digest"] == "crc32c=:yZRlqg==:")
        let part = try await rig.send("GET", "/v1/jobs/\(downloadID)/data", as: "alice", headers: [("Range", "bytes=2-4")])
        #expect(part.status == 206 && part.headers["repr-digest"] == "crc32c=:yZRlqg==:", "the whole representation's digest")
    }

    @Test func anObjectTheGatewayDidNotWriteOrThatChangedSinceHasNoChecksum() async throws {
        let rig = try RouteRig()
        rig.objects.put("private/alice/o.bin", Array("outside".utf8))
        let shown = try await rig.send("GET", "/v1/objects/properties?accessLevel=private&key=o.bin", as: "alice")
        #expect(shown.status == 200 && shown.json["checksum"] is NSNull, "\(shown.json)")
        let id = try await Self.upload(rig, "r.bin", size: 3)
        _ = try await rig.send("PUT", "/v1/jobs/\(id)/data", as: "alice", body: [1, 2, 3])
        rig.objects.put("private/alice/r.bin", [4, 5, 6])
        let replaced = try await rig.send("GET", "/v1/objects/properties?accessLevel=private&key=r.bin", as: "alice")
        #expect(replaced.json["checksum"] is NSNull, "a new ETag: the recorded checksum is not this object's")
        let download = try await rig.send(
            "POST", "/v1/jobs", as: "alice", json: ["type": "download", "source": ["accessLevel": "private", "key": "r.bin"]])
        let data = try await rig.send("GET", "/v1/jobs/\(try #require(download.json["id"] as? String))/data", as: "alice")
        #expect(data.status == 200 && data.headers["repr-digest"] == nil)
    }

    /// The smallest body: a right digest completes it, a wrong one keeps nothing.
    @Test(arguments: ["sha-256", "crc32c"])
    func aOneByteBodyIsCheckedAgainstItsContentDigest(_ algorithm: String) async throws {
        let rig = try RouteRig()
        let id = try await Self.upload(rig, "one-\(algorithm)", size: 1)
        let digest = { (bytes: [UInt8]) in algorithm == "crc32c" ? "crc32c=:\(Self.crc(bytes)):" : "sha-256=:\(Self.sha(bytes)):" }
        let wrong = try await rig.send(
            "PUT", "/v1/jobs/\(id)/data", as: "alice", body: [0x42], headers: [("Content-Digest", digest([0x43]))])
        #expect(wrong.status == 400 && wrong.code == "checksum_mismatch" && wrong.headers["upload-offset"] == "0", "\(wrong.json)")
        #expect(rig.objects.object("private/alice/one-\(algorithm)") == nil)
        let job = try #require(try await rig.store.job(id: id))
        #expect(job.state == .pending && job.bytesCommitted == 0)
        let right = try await rig.send(
            "PUT", "/v1/jobs/\(id)/data", as: "alice", body: [0x42], headers: [("Content-Digest", digest([0x42]))])
        #expect(right.status == 200 && right.json["state"] as? String == "completed", "\(right.json)")
        #expect(Self.checksum(right.json)?["value"] == Self.crc([0x42]))
    }

    /// A body of two parts (5 MiB and a little): a wrong digest leaves no part recorded, even
    /// the first, which S3 already holds; the right one makes the object, whose checksum is the
    /// parts' CRCs combined.
    @Test func aBodySpanningAPartBoundaryCommitsNothingUnlessItMatches() async throws {
        let rig = try RouteRig()
        let bytes = Self.octets(5 * 1024 * 1024 + 10)
        let id = try await Self.upload(rig, "two.bin", size: bytes.count)
        var flipped = bytes
        flipped[5 * 1024 * 1024 + 3] ^= 1
        let wrong = try await rig.send(
            "PUT", "/v1/jobs/\(id)/data", as: "alice", body: flipped, headers: [("Content-Digest", "crc32c=:\(Self.crc(bytes)):")])
        #expect(wrong.status == 400 && wrong.code == "checksum_mismatch" && wrong.headers["upload-offset"] == "0")
        #expect(try await rig.store.job(id: id)?.bytesCommitted == 0)
        #expect(try await rig.store.parts(of: id).isEmpty)
        let right = try await rig.send(
            "PUT", "/v1/jobs/\(id)/data", as: "alice", body: bytes, headers: [("Content-Digest", "sha-256=:\(Self.sha(bytes)):")])
        #expect(right.status == 200 && right.json["state"] as? String == "completed", "\(right.json)")
        #expect(try await rig.store.parts(of: id).count == 2)
        #expect(Self.checksum(right.json) == ["algorithm": "CRC32C", "value": Self.crc(bytes)])
        #expect(rig.objects.object("private/alice/two.bin") == bytes)
    }

    /// Good PATCHes, then one whose digest is wrong: the offset stays where the good ones left
    /// it, across a part boundary too, and the same bytes sent right go on from there.
    @Test func aWrongPATCHAfterGoodOnesLeavesTheOffsetWhereItWas() async throws {
        let rig = try RouteRig()
        let bytes = Self.octets(5 * 1024 * 1024 + 100, seed: 3)
        let id = try await Self.upload(rig, "p.bin", size: bytes.count)
        let first = Array(bytes[..<(3 << 20)]), second = Array(bytes[(3 << 20)..<(4 << 20)])
        let third = Array(bytes[(4 << 20)...])
        #expect(try await Self.patch(rig, id, at: 0, first, digest: "crc32c=:\(Self.crc(first)):").headers["upload-offset"] == "\(3 << 20)")
        #expect(try await Self.patch(rig, id, at: 3 << 20, second, digest: "sha-256=:\(Self.sha(second)):").status == 200)
        let wrong = try await Self.patch(rig, id, at: 4 << 20, third, digest: "sha-256=:\(Self.sha(first)):")
        #expect(wrong.status == 400 && wrong.code == "checksum_mismatch" && wrong.headers["upload-offset"] == "\(4 << 20)")
        #expect(try await rig.store.job(id: id)?.bytesCommitted == 4 << 20)
        #expect(try await rig.store.parts(of: id).isEmpty, "the part the wrong request would have made is not recorded")
        let right = try await Self.patch(rig, id, at: 4 << 20, third, digest: "crc32c=:\(Self.crc(third)):")
        #expect(right.status == 200 && right.json["state"] as? String == "completed", "\(right.json)")
        #expect(Self.checksum(right.json)?["value"] == Self.crc(bytes))
        #expect(rig.objects.object("private/alice/p.bin") == bytes)
    }

    @Test func aMalformedContentDigestIsRefusedBeforeAnyByteIsTaken() async throws {
        let rig = try RouteRig()
        let id = try await Self.upload(rig, "m.bin", size: 3)
        let refused = try await rig.send(
            "PUT", "/v1/jobs/\(id)/data", as: "alice", body: [1, 2, 3], headers: [("Content-Digest", "sha-256=:YWJj:")])
        #expect(refused.status == 400 && refused.code == "invalid_content_digest", "\(refused.json)")
        #expect(try await rig.store.job(id: id)?.bytesCommitted == 0)
        let ignored = try await rig.send(
            "PUT", "/v1/jobs/\(id)/data", as: "alice", body: [1, 2, 3], headers: [("Content-Digest", "sha-512=:YWJj:")])
        #expect(ignored.status == 200 && ignored.json["state"] as? String == "completed", "an algorithm not verified is ignored")
    }

    /// A tus upload is an upload job: its object's CRC-32C is on the job and in the properties.
    @Test func aTusUploadsObjectCarriesItsCRC32C() async throws {
        let rig = try RouteRig()
        let location = try await TusRoutesTests.create(rig, length: 11, key: "tus.bin")
        #expect(try await TusRoutesTests.patch(rig, location, offset: 0, "hello ").status == 204)
        #expect(try await TusRoutesTests.patch(rig, location, offset: 6, "world").status == 204)
        let id = try #require(location.split(separator: "/").last.map(String.init))
        let job = try await rig.send("GET", "/v1/jobs/\(id)", as: "alice")
        #expect(Self.checksum(job.json) == ["algorithm": "CRC32C", "value": "yZRlqg=="], "\(job.json)")
        let shown = try await rig.send("GET", "/v1/objects/properties?accessLevel=private&key=tus.bin", as: "alice")
        #expect(Self.checksum(shown.json)?["value"] == "yZRlqg==")
    }
}

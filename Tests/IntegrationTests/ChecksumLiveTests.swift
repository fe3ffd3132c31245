import Crypto
import Foundation
import S3
import Testing

@testable import Adapters
@testable import Gateway
@testable import TransferGateway

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

extension JobTableTests {
    /// Whole-object checksums against PostgreSQL and SeaweedFS: an upload job checked by its
    /// `Content-Digest`, the object's CRC-32C on the job, its properties and a download's
    /// `Repr-Digest`; a client upload whose part URLs sign their checksums.
    @Suite struct ChecksumLiveTests {
        static func crc(_ bytes: some Collection<UInt8>) -> String {
            Digest.crc32cBase64(Array(bytes).withUnsafeBytes { Digest.crc32c($0) })
        }
        static func sha(_ bytes: some Collection<UInt8>) -> String { Data(Digest.sha256(Array(bytes))).base64EncodedString() }
        static func octets(_ count: Int) -> [UInt8] { (0..<count).map { UInt8(truncatingIfNeeded: ($0 &* 2_654_435_761) >> 13) } }

        @Test func anUploadJobIsCheckedByItsContentDigestAndReportsItsObjectsCRC32C() async throws {
            let gateway = try LiveGateway()
            defer { Task { await gateway.stop() } }
            let token = gateway.token("alice")
            let key = "checksum-\(UUID().uuidString).bin"
            let bytes = Self.octets((5 << 20) + 1000)
            let created = try await gateway.request(
                "POST", "/v1/jobs", token: token, json: ["type": "upload", "accessLevel": "private", "key": key, "size": bytes.count])
            let id = try #require(created.json["id"] as? String)
            // 3 MiB with a right digest, then a body across the part boundary with a wrong one.
            let first = Data(bytes[..<(3 << 20)]), rest = Data(bytes[(3 << 20)...])
            let good = try await gateway.request(
                "PUT", "/v1/jobs/\(id)/data", token: token, rawBody: first,
                headers: ["Content-Type": "application/octet-stream", "Content-Digest": "sha-256=:\(Self.sha(first)):"])
            #expect(good.status == 200 && good.header("Upload-Offset") == "\(3 << 20)", "\(good.json)")
            var flipped = rest
            flipped[flipped.startIndex + (2 << 20)] ^= 0x01
            let patchHeaders = [
                "Content-Type": "application/offset+octet-stream", "Upload-Offset": "\(3 << 20)",
                "Content-Digest": "crc32c=:\(Self.crc(rest)):",
            ]
            let wrong = try await gateway.request("PATCH", "/v1/jobs/\(id)/data", token: token, rawBody: flipped, headers: patchHeaders)
            #expect(wrong.status == 400 && wrong.json["code"] as? String == "checksum_mismatch", "\(wrong.json)")
            #expect(wrong.header("Upload-Offset") == "\(3 << 20)")
            let shown = try await gateway.request("GET", "/v1/jobs/\(id)", token: token)
            #expect(shown.json["bytesCommitted"] as? Int == 3 << 20 && shown.json["state"] as? String == "pending", "\(shown.json)")
            let right = try await gateway.request("PATCH", "/v1/jobs/\(id)/data", token: token, rawBody: rest, headers: patchHeaders)
            #expect(right.status == 200 && right.json["state"] as? String == "completed", "\(right.json)")
            let expected: [String: String] = ["algorithm": "CRC32C", "value": Self.crc(bytes)]
            #expect(right.json["checksum"] as? [String: String] == expected)

            // The object as S3 holds it has that CRC-32C.
            let client = try gateway.configuration.makeS3Client()
            let stored = try await client.getObject(key: "private/alice/\(key)", range: nil, ifMatch: nil, sink: .memory(limit: 8 << 20))
                .body
            #expect(stored == bytes)
            let properties = try await gateway.request("GET", "/v1/objects/properties?accessLevel=private&key=\(key)", token: token)
            #expect(properties.json["checksum"] as? [String: String] == expected, "\(properties.json)")

            let download = try await gateway.request(
                "POST", "/v1/jobs", token: token, json: ["type": "download", "source": ["accessLevel": "private", "key": key]])
            #expect(download.json["checksum"] as? [String: String] == expected, "\(download.json)")
            let downloadID = try #require(download.json["id"] as? String)
            let whole = try await gateway.request("GET", "/v1/jobs/\(downloadID)/data", token: token)
            #expect(whole.status == 200 && whole.header("Repr-Digest") == "crc32c=:\(Self.crc(bytes)):")
            let tail = try await gateway.request("GET", "/v1/jobs/\(downloadID)/data", token: token, headers: ["Range": "bytes=100-"])
            #expect(tail.status == 206 && tail.header("Repr-Digest") == "crc32c=:\(Self.crc(bytes)):")
            #expect(Self.crc(Array(whole.body)) == Self.crc(bytes))
            try await client.deleteObject(key: "private/alice/\(key)")
        }

        @Test func aOneBytePutWithAWrongDigestKeepsNothing() async throws {
            let gateway = try LiveGateway()
            defer { Task { await gateway.stop() } }
            let token = gateway.token("alice")
            let key = "checksum-one-\(UUID().uuidString).bin"
            let created = try await gateway.request(
                "POST", "/v1/jobs", token: token, json: ["type": "upload", "accessLevel": "private", "key": key, "size": 1])
            let id = try #require(created.json["id"] as? String)
            let wrong = try await gateway.request(
                "PUT", "/v1/jobs/\(id)/data", token: token, rawBody: Data([0x61]),
                headers: ["Content-Type": "application/octet-stream", "Content-Digest": "sha-256=:\(Self.sha([0x62])):"])
            #expect(wrong.status == 400 && wrong.json["code"] as? String == "checksum_mismatch" && wrong.header("Upload-Offset") == "0")
            let absent = try await gateway.request("GET", "/v1/objects/properties?accessLevel=private&key=\(key)", token: token)
            #expect(absent.status == 404)
            let right = try await gateway.request(
                "PUT", "/v1/jobs/\(id)/data", token: token, rawBody: Data([0x61]),
                headers: ["Content-Type": "application/octet-stream", "Content-Digest": "crc32c=:\(Self.crc([0x61])):"])
            #expect(right.status == 200 && (right.json["checksum"] as? [String: String])?["value"] == Self.crc([0x61]))
            try await gateway.configuration.makeS3Client().deleteObject(key: "private/alice/\(key)")
        }

        /// SeaweedFS checks a part's signed `x-amz-checksum-crc32c`: other bytes are 400
        /// `BadDigest`, a missing header breaks the signature (403); the completion holds the
        /// object to the client's expected checksum.
        @Test func aClientUploadsPartURLsSignTheirChecksums() async throws {
            let gateway = try LiveGateway()
            defer { Task { await gateway.stop() } }
            let token = gateway.token("alice")
            let key = "checksum-client-\(UUID().uuidString).bin"
            let bytes = Self.octets((5 << 20) + 77)
            let halves = [Data(bytes[..<(5 << 20)]), Data(bytes[(5 << 20)...])]
            let created = try await gateway.request(
                "POST", "/v1/uploads", token: token,
                json: ["accessLevel": "private", "key": key, "size": bytes.count, "checksumAlgorithm": "CRC32C"])
            #expect(created.status == 201, "\(created.json)")
            let id = try #require(created.json["uploadId"] as? String)
            let signed = try await gateway.request(
                "POST", "/v1/uploads/\(id)/parts", token: token,
                json: ["parts": [["partNumber": 1, "checksum": Self.crc(halves[0])], ["partNumber": 2, "checksum": Self.crc(halves[1])]]])
            let parts = try #require(signed.json["parts"] as? [[String: Any]], "\(signed.json)")
            func put(_ index: Int, _ body: Data, header: Bool = true) async throws -> (Int, String) {
                var request = URLRequest(url: URL(string: try #require(parts[index]["url"] as? String))!)
                request.httpMethod = "PUT"
                request.httpBody = body
                if header {
                    for (name, value) in parts[index]["headers"] as? [String: String] ?? [:] {
                        request.setValue(value, forHTTPHeaderField: name)
                    }
                }
                let (data, response) = try await URLSession.shared.data(for: request)
                return ((response as! HTTPURLResponse).statusCode, String(decoding: data, as: UTF8.self))
            }
            var flipped = halves[0]
            flipped[flipped.startIndex + 12345] ^= 0x80
            let refused = try await put(0, flipped)
            #expect(refused.0 == 400 && refused.1.contains("BadDigest"), "\(refused)")
            #expect(try await put(0, halves[0], header: false).0 == 403, "the checksum header is signed")
            #expect(try await put(0, halves[0]).0 == 200)
            #expect(try await put(1, halves[1]).0 == 200)
            let mismatch = try await gateway.request(
                "POST", "/v1/uploads/\(id)/complete", token: token, json: ["checksum": ["algorithm": "CRC32C", "value": Self.crc([1])]])
            #expect(mismatch.status == 400 && mismatch.json["code"] as? String == "checksum_mismatch", "\(mismatch.json)")
            let done = try await gateway.request(
                "POST", "/v1/uploads/\(id)/complete", token: token,
                json: ["checksum": ["algorithm": "CRC32C", "value": Self.crc(bytes)]])
            #expect(done.status == 200 && (done.json["checksum"] as? [String: String])?["value"] == Self.crc(bytes), "\(done.json)")
            let properties = try await gateway.request("GET", "/v1/objects/properties?accessLevel=private&key=\(key)", token: token)
            #expect((properties.json["checksum"] as? [String: String])?["value"] == Self.crc(bytes), "\(properties.json)")
            try await gateway.configuration.makeS3Client().deleteObject(key: "private/alice/\(key)")
        }

        /// An object put outside the gateway with S3's own whole-object checksum: the properties
        /// give S3's (HEAD with `x-amz-checksum-mode`); put without one, none.
        @Test func propertiesGiveTheChecksumS3KeepsForAWholeObject() async throws {
            let gateway = try LiveGateway()
            defer { Task { await gateway.stop() } }
            let token = gateway.token("alice")
            let client = try gateway.configuration.makeS3Client()
            let key = "checksum-outside-\(UUID().uuidString).txt"
            let bytes = Array("hello world".utf8)
            _ = try await client.putObject(key: "private/alice/\(key)", body: .bytes(bytes), checksumCRC32C: Self.crc(bytes))
            let shown = try await gateway.request("GET", "/v1/objects/properties?accessLevel=private&key=\(key)", token: token)
            #expect(shown.json["checksum"] as? [String: String] == ["algorithm": "CRC32C", "value": "yZRlqg=="], "\(shown.json)")
            _ = try await client.putObject(key: "private/alice/\(key)", body: .bytes(bytes), contentMD5: S3Client.contentMD5(bytes))
            let plain = try await gateway.request("GET", "/v1/objects/properties?accessLevel=private&key=\(key)", token: token)
            #expect(plain.json["checksum"] is NSNull, "\(plain.json)")
            try await client.deleteObject(key: "private/alice/\(key)")
        }
    }
}

import Foundation
import TestSupport
import Testing
import TransferEngine

@testable import Gateway

/// `/v1/uploads` (client-driven multipart) and `/v1/presign` over in-memory ports.
@Suite struct UploadsRoutesTests {
    @Test func anUploadIsSignedCompletedAndListedByItsParts() async throws {
        let rig = try RouteRig()
        let size = 12 * 1024 * 1024
        let created = try await rig.send(
            "POST", "/v1/uploads", as: "alice", json: ["accessLevel": "private", "key": "big.bin", "size": size])
        #expect(created.status == 201, "\(created.json)")
        let id = try #require(created.json["uploadId"] as? String)
        let parts = try #require(created.json["parts"] as? [[String: Any]])
        #expect(parts.count == 3)
        // Each URL signs its part's exact length: every part the same size but the last.
        #expect((parts[0]["url"] as? String)?.contains("h-content-length=5242880") == true)
        #expect((parts[2]["url"] as? String)?.contains("h-content-length=\(size - 2 * 5_242_880)") == true)
        let record = try #require(try await rig.clientUploads.upload(id: id))
        let s3ID = try #require(record.s3UploadID)
        for (number, length) in [(1, 5_242_880), (2, 5_242_880), (3, size - 2 * 5_242_880)] {
            _ = try await rig.objects.uploadPart(
                key: "private/alice/big.bin", uploadID: s3ID, part: number,
                data: .bytes([UInt8](repeating: UInt8(number), count: length)), checksum: .md5)
        }
        let shown = try await rig.send("GET", "/v1/uploads/\(id)", as: "alice")
        #expect(shown.json["bytesUploaded"] as? Int == size && shown.json["fractionCompleted"] as? Double == 1)
        let done = try await rig.send("POST", "/v1/uploads/\(id)/complete", as: "alice", json: [:])
        #expect(done.status == 200 && done.json["size"] as? Int == size, "\(done.json)")
        #expect(try await rig.send("GET", "/v1/uploads/\(id)", as: "bob").status == 404)
    }

    /// A completion whose request died after S3 made the object (the record says `completing`,
    /// S3 no longer has the upload): the next complete answers the object, and the record says
    /// completed — not 404, not aborted.
    @Test func aCompletionMadeByARequestThatDiedIsAnsweredWithItsObject() async throws {
        let rig = try RouteRig()
        let size = 6 * 1024 * 1024
        let created = try await rig.send(
            "POST", "/v1/uploads", as: "alice", json: ["accessLevel": "private", "key": "done.bin", "size": size])
        let id = try #require(created.json["uploadId"] as? String)
        let s3ID = try #require(try await rig.clientUploads.upload(id: id)?.s3UploadID)
        var parts: [RecordedPart] = []
        for (number, length) in [(1, 5_242_880), (2, size - 5_242_880)] {
            parts.append(
                try await rig.objects.uploadPart(
                    key: "private/alice/done.bin", uploadID: s3ID, part: number,
                    data: .bytes([UInt8](repeating: UInt8(number), count: length)), checksum: .md5))
        }
        // What the dead request did: claimed the record, and S3 made the object.
        #expect(try await rig.clientUploads.claim(id: id, for: .completing))
        let etag = try await rig.objects.completeMultipartUpload(key: "private/alice/done.bin", uploadID: s3ID, parts: parts)
        let done = try await rig.send("POST", "/v1/uploads/\(id)/complete", as: "alice", json: [:])
        #expect(done.status == 409 && done.headers["retry-after"] == "10", "held by a request that may still be at it: \(done.json)")
        // The claim is stale (the request is gone): taken over, and answered from the object.
        try await rig.clientUploads.release(claimOf: id)
        let again = try await rig.send("POST", "/v1/uploads/\(id)/complete", as: "alice", json: [:])
        #expect(again.status == 200 && again.json["etag"] as? String == etag, "\(again.status) \(again.json)")
        #expect(try await rig.clientUploads.upload(id: id)?.state == .completed)
    }

    @Test func aMissingPartIsNamedAndAnAbortedUploadIsGone() async throws {
        let rig = try RouteRig()
        let created = try await rig.send(
            "POST", "/v1/uploads", as: "alice", json: ["accessLevel": "private", "key": "m.bin", "size": 6 << 20])
        let id = try #require(created.json["uploadId"] as? String)
        let missing = try await rig.send("POST", "/v1/uploads/\(id)/complete", as: "alice", json: [:])
        #expect(missing.status == 409 && missing.code == "parts_missing")
        let outOfRange = try await rig.send("POST", "/v1/uploads/\(id)/parts", as: "alice", json: ["partNumbers": [3]])
        #expect(outOfRange.status == 409 && outOfRange.code == "part_out_of_range")
        #expect(try await rig.send("DELETE", "/v1/uploads/\(id)", as: "alice").status == 204)
        #expect(try await rig.send("GET", "/v1/uploads/\(id)", as: "alice").status == 404)
        #expect(rig.objects.openUploads == 0)
    }

    @Test func openUploadsPerIdentityAreBounded() async throws {
        let rig = try RouteRig { $0.quota = OwnerQuota(maxActiveJobs: 16, maxOpenUploads: 1) }
        #expect(
            try await rig.send("POST", "/v1/uploads", as: "alice", json: ["accessLevel": "private", "key": "a", "size": 1]).status == 201)
        let second = try await rig.send("POST", "/v1/uploads", as: "alice", json: ["accessLevel": "private", "key": "b", "size": 1])
        #expect(second.status == 429 && second.code == "quota_exceeded")
        #expect(rig.objects.openUploads == 1, "a refused upload asks S3 for nothing")
    }

    @Test func presignSignsWhatTheCallerMayTouch() async throws {
        let rig = try RouteRig()
        let put = try await rig.send(
            "POST", "/v1/presign", as: "alice",
            json: ["operation": "put", "accessLevel": "private", "key": "n.txt", "contentType": "text/plain"])
        #expect(put.status == 200 && (put.json["url"] as? String)?.hasPrefix("https://s3.test/private/alice/n.txt?method=PUT") == true)
        #expect((put.json["expiresAt"] as? String)?.hasSuffix(".000Z") == true, "one timestamp format")
        let theirs = try await rig.send(
            "POST", "/v1/presign", as: "bob",
            json: ["operation": "get", "accessLevel": "private", "key": "n.txt", "targetIdentityId": "alice"])
        #expect(theirs.status == 403)
    }
}

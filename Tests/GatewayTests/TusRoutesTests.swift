import Crypto
import Foundation
import TestSupport
import Testing
import TransferEngine

@testable import Gateway

/// `/v1/tus/` through the real router over in-memory ports: tus 1.0 core, creation,
/// creation-with-upload, termination, expiration and checksum, no network, no database.
struct TusRoutesTests {
    static func metadata(_ pairs: [(String, String?)]) -> String {
        pairs.map { name, value in value.map { "\(name) \(Data($0.utf8).base64EncodedString())" } ?? name }.joined(separator: ",")
    }

    static let tus = ("Tus-Resumable", "1.0.0")
    static let chunk = ("Content-Type", "application/offset+octet-stream")

    /// Creates an upload of `length` bytes for alice named `key`; returns its Location.
    static func create(_ rig: RouteRig, length: Int, key: String = "t.bin", as subject: String = "alice") async throws -> String {
        let created = try await rig.send(
            "POST", "/v1/tus/", as: subject,
            headers: [
                tus, ("Upload-Length", String(length)), ("Upload-Metadata", metadata([("key", key)])),
            ])
        #expect(created.status == 201, "\(created.json)")
        return try #require(created.headers["location"])
    }

    /// Sends `body` at `offset`, with `headers` besides tus's own.
    static func patch(
        _ rig: RouteRig, _ location: String, offset: Int, _ body: String, as subject: String = "alice",
        headers: [(String, String)] = [chunk]
    ) async throws -> RouteRig.Answer {
        try await rig.send(
            "PATCH", location, as: subject, body: Array(body.utf8),
            headers: [tus, ("Upload-Offset", String(offset))] + headers)
    }

    static func offset(_ rig: RouteRig, _ location: String) async throws -> String? {
        try await rig.send("HEAD", location, as: "alice", headers: [tus]).headers["upload-offset"]
    }

    /// tus 1.0 core: "If an upload contains additional metadata, responses to HEAD requests MUST
    /// include the Upload-Metadata header and its value as specified by the Client during the creation."
    @Test func headReturnsUploadMetadataAsCreated() async throws {
        let rig = try RouteRig()
        let sent = Self.metadata([
            ("key", "notes/t.txt"), ("accessLevel", "private"), ("filetype", "text/plain"),
            ("is_confidential", nil), ("origin", "Zürich"),
        ])
        let created = try await rig.send(
            "POST", "/v1/tus/", as: "alice",
            headers: [
                ("Tus-Resumable", "1.0.0"), ("Upload-Length", "11"), ("Upload-Metadata", sent),
            ])
        #expect(created.status == 201)
        let location = try #require(created.headers["location"])
        let head = try await rig.send("HEAD", location, as: "alice", headers: [("Tus-Resumable", "1.0.0")])
        #expect(head.status == 200 && head.headers["upload-metadata"] == sent)
    }

    @Test func anUploadCreatedWithoutMetadataHasNoneInHead() async throws {
        let rig = try RouteRig()
        let created = try await rig.send(
            "POST", "/v1/tus/", as: "alice",
            headers: [
                ("Tus-Resumable", "1.0.0"), ("Upload-Length", "3"), ("Upload-Metadata", Self.metadata([("filename", "a.txt")])),
            ])
        let location = try #require(created.headers["location"])
        let head = try await rig.send("HEAD", location, as: "alice", headers: [("Tus-Resumable", "1.0.0")])
        #expect(head.headers["upload-metadata"] == Self.metadata([("filename", "a.txt")]))
        // An upload job made at /v1/jobs is no tus upload: its HEAD (were it asked) carries no metadata.
        let job = try await rig.send("POST", "/v1/jobs", as: "alice", json: ["type": "upload", "accessLevel": "private", "key": "j"])
        let id = try #require(job.json["id"] as? String)
        let jobHead = try await rig.send("HEAD", "/v1/tus/\(id)", as: "alice", headers: [("Tus-Resumable", "1.0.0")])
        #expect(jobHead.status == 200 && jobHead.headers["upload-metadata"] == nil)
    }

    /// tus 1.0 core: OPTIONS names the server's version, extensions, maximum size and checksum
    /// algorithms, and needs neither a token nor Tus-Resumable.
    @Test func optionsAnswersWhatTheServerSupports() async throws {
        let rig = try RouteRig()
        for target in ["/v1/tus/", "/v1/tus/\(UUID().uuidString.lowercased())"] {
            let answer = try await rig.send("OPTIONS", target)
            #expect(answer.status == 200, "\(target)")
            #expect(answer.headers["tus-resumable"] == "1.0.0" && answer.headers["tus-version"] == "1.0.0")
            #expect(answer.headers["tus-extension"] == "creation,creation-with-upload,termination,expiration,checksum")
            #expect(answer.headers["tus-max-size"] == String(EngineSettings().maxObjectSize))
            #expect(answer.headers["tus-checksum-algorithm"] == "sha1,md5")
        }
    }

    /// Upload-Metadata names the object (its key, access level and type) and carries the
    /// user metadata it is stored with.
    @Test func creationWithMetadataNamesTheObjectAndItsAttributes() async throws {
        let rig = try RouteRig()
        let created = try await rig.send(
            "POST", "/v1/tus/", as: "alice",
            headers: [
                Self.tus, ("Upload-Length", "11"),
                (
                    "Upload-Metadata",
                    Self.metadata([
                        ("key", "docs/report.txt"), ("accessLevel", "protected"), ("filetype", "text/plain"),
                        ("origin", "tus-test"),
                    ])
                ),
            ])
        #expect(created.status == 201 && created.headers["tus-resumable"] == "1.0.0")
        #expect(created.headers["upload-expires"]?.hasSuffix(" GMT") == true && created.headers["upload-offset"] == nil)
        let location = try #require(created.headers["location"])
        let id = try #require(location.split(separator: "/").last.map(String.init))
        #expect(location == "/v1/tus/\(id)")
        let job = try await rig.send("GET", "/v1/jobs/\(id)", as: "alice")
        #expect(job.json["type"] as? String == "upload" && job.json["state"] as? String == "pending")
        #expect(job.json["objectKey"] as? String == "protected/alice/docs/report.txt" && job.json["bytesTotal"] as? Int == 11)
        let sent = try await Self.patch(rig, location, offset: 0, "hello world")
        #expect(sent.status == 204 && sent.headers["upload-offset"] == "11")
        #expect(rig.objects.object("protected/alice/docs/report.txt") == Array("hello world".utf8))
        let attributes = try #require(rig.objects.attributes("protected/alice/docs/report.txt"))
        #expect(attributes.contentType == "text/plain" && attributes.metadata == ["origin": "tus-test"])
    }

    /// creation-with-upload: the first bytes ride on the creation, whose answer gives the offset.
    @Test func creationWithUploadTakesTheFirstBytes() async throws {
        let rig = try RouteRig()
        let created = try await rig.send(
            "POST", "/v1/tus/", as: "alice", body: Array("hello".utf8),
            headers: [
                Self.tus, Self.chunk, ("Upload-Length", "11"), ("Upload-Metadata", Self.metadata([("filename", "w.txt")])),
            ])
        #expect(created.status == 201 && created.headers["upload-offset"] == "5")
        let location = try #require(created.headers["location"])
        #expect(try await Self.offset(rig, location) == "5")
    }

    @Test func creationIsRefusedWithoutWhatItNeeds() async throws {
        let rig = try RouteRig()
        let named = ("Upload-Metadata", Self.metadata([("key", "r.bin")]))
        func create(_ headers: [(String, String)], as subject: String? = "alice") async throws -> RouteRig.Answer {
            try await rig.send("POST", "/v1/tus/", as: subject, headers: headers)
        }
        let noVersion = try await create([("Upload-Length", "1"), named])
        #expect(noVersion.status == 412 && noVersion.code == "tus_version_unsupported" && noVersion.headers["tus-version"] == "1.0.0")
        #expect(try await create([Self.tus, named]).code == "validation_failed", "no Upload-Length")
        #expect(try await create([Self.tus, ("Upload-Defer-Length", "1"), named]).code == "validation_failed")
        let tooLarge = try await create([Self.tus, ("Upload-Length", String(EngineSettings().maxObjectSize + 1)), named])
        #expect(tooLarge.status == 413 && tooLarge.code == "payload_too_large")
        #expect(
            try await create([Self.tus, ("Upload-Length", "1"), ("Upload-Metadata", Self.metadata([("filetype", "text/plain")]))])
                .code == "validation_failed", "nothing names the object")
        #expect(try await create([Self.tus, ("Upload-Length", "1"), ("Upload-Metadata", "key not-base64!")]).code == "validation_failed")
        #expect(
            try await create([Self.tus, ("Upload-Length", "1"), ("Upload-Metadata", Self.metadata([("key", "../up")]))])
                .code == "invalid_key")
        #expect(try await create([Self.tus, ("Upload-Length", "1"), named], as: nil).status == 401)
        #expect(try await rig.store.list(owner: "alice", state: nil, kind: nil, limit: 10, after: nil).isEmpty, "nothing was made")
    }

    @Test func headAnswersTheOffsetCommitted() async throws {
        let rig = try RouteRig()
        let location = try await Self.create(rig, length: 11)
        let fresh = try await rig.send("HEAD", location, as: "alice", headers: [Self.tus])
        #expect(fresh.status == 200 && fresh.headers["upload-offset"] == "0" && fresh.headers["upload-length"] == "11")
        #expect(fresh.headers["cache-control"] == "no-store" && fresh.headers["upload-expires"] != nil)
        #expect(try await Self.patch(rig, location, offset: 0, "hello").status == 204)
        #expect(try await Self.offset(rig, location) == "5")
        #expect(try await rig.send("HEAD", location, as: "bob", headers: [Self.tus]).status == 404, "another identity's upload")
        #expect(try await rig.send("HEAD", "/v1/tus/\(UUID().uuidString.lowercased())", as: "alice", headers: [Self.tus]).status == 404)
        #expect(try await rig.send("HEAD", location, as: "alice").status == 412, "no Tus-Resumable")
    }

    /// tus 1.0 core: "If the offsets do not match, the Server MUST respond with the 409 Conflict
    /// status without modifying the upload resource."
    @Test func aPatchAtAnotherOffsetIsAConflict() async throws {
        let rig = try RouteRig()
        let location = try await Self.create(rig, length: 11)
        #expect(try await Self.patch(rig, location, offset: 0, "hello").headers["upload-offset"] == "5")
        for wrong in [0, 7] {
            let refused = try await Self.patch(rig, location, offset: wrong, " world")
            #expect(refused.status == 409 && refused.code == "offset_mismatch" && refused.headers["upload-offset"] == "5", "at \(wrong)")
        }
        #expect(try await Self.offset(rig, location) == "5")
        let rest = try await Self.patch(rig, location, offset: 5, " world")
        #expect(rest.status == 204 && rest.headers["upload-offset"] == "11")
        #expect(rig.objects.object("private/alice/t.bin") == Array("hello world".utf8))
    }

    /// tus 1.0 core: "All PATCH requests MUST use Content-Type: application/offset+octet-stream,
    /// otherwise the server SHOULD return a 415 Unsupported Media Type status."
    @Test func aPatchThatIsNotAnOffsetStreamIs415() async throws {
        let rig = try RouteRig()
        let location = try await Self.create(rig, length: 11)
        for headers in [[("Content-Type", "application/octet-stream")], []] {
            let refused = try await Self.patch(rig, location, offset: 0, "hello", headers: headers)
            #expect(refused.status == 415 && refused.code == "unsupported_media_type" && refused.headers["tus-resumable"] == "1.0.0")
        }
        #expect(try await Self.offset(rig, location) == "0")
    }

    /// tus checksum extension: a chunk whose Upload-Checksum does not match is refused with 460
    /// and none of it is kept; a matching one counts; an algorithm not offered is 400.
    @Test func aChunkThatFailsItsChecksumIs460AndKeepsNothing() async throws {
        let rig = try RouteRig()
        let location = try await Self.create(rig, length: 11)
        func checksum(_ algorithm: String, _ digest: [UInt8]) -> (String, String) {
            ("Upload-Checksum", "\(algorithm) \(Data(digest).base64EncodedString())")
        }
        let wrong = try await Self.patch(
            rig, location, offset: 0, "hello",
            headers: [Self.chunk, checksum("sha1", Digest.sha1(Array("jello".utf8)))])
        #expect(wrong.status == 460 && wrong.code == "checksum_mismatch" && wrong.headers["upload-offset"] == "0")
        #expect(try await Self.offset(rig, location) == "0")
        let right = try await Self.patch(
            rig, location, offset: 0, "hello", headers: [Self.chunk, checksum("md5", Digest.md5(Array("hello".utf8)))])
        #expect(right.status == 204 && right.headers["upload-offset"] == "5")
        let unknown = try await Self.patch(
            rig, location, offset: 5, " world", headers: [Self.chunk, ("Upload-Checksum", "crc32 AAAAAA==")])
        #expect(unknown.status == 400 && unknown.code == "checksum_algorithm_unsupported")
        let malformed = try await Self.patch(rig, location, offset: 5, " world", headers: [Self.chunk, ("Upload-Checksum", "sha1")])
        #expect(malformed.status == 400 && malformed.code == "validation_failed")
        #expect(try await Self.offset(rig, location) == "5")
    }

    /// tus termination: DELETE ends the upload; from then on it is gone (410). A completed
    /// upload is an object now, not an upload to terminate.
    @Test func terminationEndsTheUploadForGood() async throws {
        let rig = try RouteRig()
        let location = try await Self.create(rig, length: 11)
        #expect(try await Self.patch(rig, location, offset: 0, "hello").status == 204)
        #expect(try await rig.send("DELETE", location, as: "bob", headers: [Self.tus]).status == 404, "another identity's upload")
        let ended = try await rig.send("DELETE", location, as: "alice", headers: [Self.tus])
        #expect(ended.status == 204 && ended.headers["tus-resumable"] == "1.0.0")
        #expect(try await rig.send("HEAD", location, as: "alice", headers: [Self.tus]).status == 410)
        #expect(try await Self.patch(rig, location, offset: 5, " world").status == 410)
        #expect(try await rig.send("DELETE", location, as: "alice", headers: [Self.tus]).status == 410)
        let id = try #require(location.split(separator: "/").last.map(String.init))
        #expect(try await rig.send("GET", "/v1/jobs/\(id)", as: "alice").json["state"] as? String == "canceled")
        #expect(rig.objects.object("private/alice/t.bin") == nil)

        let done = try await Self.create(rig, length: 3, key: "done.bin")
        #expect(try await Self.patch(rig, done, offset: 0, "abc").status == 204)
        let refused = try await rig.send("DELETE", done, as: "alice", headers: [Self.tus])
        #expect(refused.status == 409 && refused.code == "job_not_pending")
        #expect(rig.objects.object("private/alice/done.bin") == Array("abc".utf8))
    }
}

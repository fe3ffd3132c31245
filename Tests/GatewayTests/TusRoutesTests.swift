import Foundation
import Testing
@testable import Gateway

/// `/v1/tus/` through the real router over in-memory ports.
struct TusRoutesTests {
    static func metadata(_ pairs: [(String, String?)]) -> String {
        pairs.map { name, value in value.map { "\(name) \(Data($0.utf8).base64EncodedString())" } ?? name }.joined(separator: ",")
    }

    /// tus 1.0 core: "If an upload contains additional metadata, responses to HEAD requests MUST
    /// include the Upload-Metadata header and its value as specified by the Client during the creation."
    @Test func headReturnsUploadMetadataAsCreated() async throws {
        let rig = try RouteRig()
        let sent = Self.metadata([("key", "notes/t.txt"), ("accessLevel", "private"), ("filetype", "text/plain"),
                                  ("is_confidential", nil), ("origin", "Zürich")])
        let created = try await rig.send("POST", "/v1/tus/", as: "alice", headers: [
            ("Tus-Resumable", "1.0.0"), ("Upload-Length", "11"), ("Upload-Metadata", sent)])
        #expect(created.status == 201)
        let location = try #require(created.headers["location"])
        let head = try await rig.send("HEAD", location, as: "alice", headers: [("Tus-Resumable", "1.0.0")])
        #expect(head.status == 200 && head.headers["upload-metadata"] == sent)
    }

    @Test func anUploadCreatedWithoutMetadataHasNoneInHead() async throws {
        let rig = try RouteRig()
        let created = try await rig.send("POST", "/v1/tus/", as: "alice", headers: [
            ("Tus-Resumable", "1.0.0"), ("Upload-Length", "3"), ("Upload-Metadata", Self.metadata([("filename", "a.txt")]))])
        let location = try #require(created.headers["location"])
        let head = try await rig.send("HEAD", location, as: "alice", headers: [("Tus-Resumable", "1.0.0")])
        #expect(head.headers["upload-metadata"] == Self.metadata([("filename", "a.txt")]))
        // An upload job made at /v1/jobs is no tus upload: its HEAD (were it asked) carries no metadata.
        let job = try await rig.send("POST", "/v1/jobs", as: "alice", json: ["type": "upload", "accessLevel": "private", "key": "j"])
        let id = try #require(job.json["id"] as? String)
        let jobHead = try await rig.send("HEAD", "/v1/tus/\(id)", as: "alice", headers: [("Tus-Resumable", "1.0.0")])
        #expect(jobHead.status == 200 && jobHead.headers["upload-metadata"] == nil)
    }
}

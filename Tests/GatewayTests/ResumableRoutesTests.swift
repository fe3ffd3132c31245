import Foundation
import TestSupport
import Testing
import TransferEngine

@testable import Gateway

/// `/v1/resumable/` through the real router over in-memory ports: creation, offset retrieval,
/// append and cancellation in interop versions 3 and 6, and the refusals. (The 104 needs a
/// socket: the live tests see it.)
struct ResumableRoutesTests {
    static func v(_ number: Int) -> (String, String) { ("Upload-Draft-Interop-Version", String(number)) }
    static let partial = ("Content-Type", "application/partial-upload")

    /// The path of an absolute Location.
    static func path(_ location: String?) throws -> String {
        let text = try #require(location)
        return String(text[try #require(text.range(of: "/v1/resumable/")).lowerBound...])
    }

    @Test func interop6CreatesIncompleteThenAppendsTheRest() async throws {
        let rig = try RouteRig()
        let created = try await rig.send(
            "POST", "/v1/resumable/?accessLevel=private&key=a/b.bin", as: "alice", body: Array("hello ".utf8),
            headers: [Self.v(6), ("Upload-Complete", "?0"), ("Upload-Length", "11"), ("Content-Type", "text/plain")])
        #expect(created.status == 201, "\(created.json)")
        #expect(created.headers["upload-offset"] == "6" && created.headers["upload-complete"] == "?0")
        #expect(created.headers["upload-limit"]?.hasPrefix("max-size=") == true)
        let path = try Self.path(created.headers["location"])
        let head = try await rig.send("HEAD", path, as: "alice", headers: [Self.v(6)])
        #expect(head.status == 204)
        #expect(head.headers["upload-offset"] == "6" && head.headers["upload-complete"] == "?0")
        #expect(head.headers["upload-length"] == "11" && head.headers["cache-control"] == "no-store")
        let done = try await rig.send(
            "PATCH", path, as: "alice", body: Array("world".utf8),
            headers: [Self.v(6), Self.partial, ("Upload-Offset", "6"), ("Upload-Complete", "?1")])
        #expect(done.status == 201 && done.headers["upload-complete"] == "?1" && done.headers["upload-offset"] == "11")
        #expect(done.json["state"] as? String == "completed")
        #expect(rig.objects.object("private/alice/a/b.bin") == Array("hello world".utf8))
        #expect(rig.objects.attributes("private/alice/a/b.bin")?.contentType == "text/plain")
        let after = try await rig.send("HEAD", path, as: "alice", headers: [Self.v(6)])
        #expect(after.headers["upload-complete"] == "?1" && after.headers["upload-offset"] == "11")
        // The last answer was lost: an empty completing append at the end gets it again.
        let replay = try await rig.send(
            "PATCH", path, as: "alice", headers: [Self.v(6), Self.partial, ("Upload-Offset", "11"), ("Upload-Complete", "?1")])
        #expect(replay.status == 201 && replay.json["state"] as? String == "completed")
        let more = try await rig.send(
            "PATCH", path, as: "alice", body: [1], headers: [Self.v(6), Self.partial, ("Upload-Offset", "11"), ("Upload-Complete", "?1")])
        #expect(more.status == 400 && more.code == "upload_completed")
    }

    @Test func interop3SaysUploadIncompleteAndTakesAnyBodyType() async throws {
        let rig = try RouteRig()
        let created = try await rig.send(
            "POST", "/v1/resumable/?key=v3.bin", as: "alice", body: Array("abc".utf8),
            headers: [Self.v(3), ("Upload-Incomplete", "?1")])
        #expect(created.status == 201 && created.headers["upload-incomplete"] == "?1" && created.headers["upload-offset"] == "3")
        #expect(created.headers["upload-limit"] == nil && created.headers["upload-complete"] == nil)
        let path = try Self.path(created.headers["location"])
        let head = try await rig.send("HEAD", path, as: "alice", headers: [Self.v(3)])
        #expect(head.status == 204 && head.headers["upload-incomplete"] == "?1" && head.headers["upload-offset"] == "3")
        // Without Upload-Incomplete an append is the end (draft -01).
        let done = try await rig.send(
            "PATCH", path, as: "alice", body: Array("def".utf8),
            headers: [Self.v(3), ("Upload-Offset", "3"), ("Content-Type", "application/octet-stream")])
        #expect(done.status == 201 && done.headers["upload-incomplete"] == "?0")
        #expect(rig.objects.object("private/alice/v3.bin") == Array("abcdef".utf8))
    }

    @Test func aWholeUploadInOneRequestAndAnEmptyOne() async throws {
        let rig = try RouteRig()
        let whole = try await rig.send(
            "POST", "/v1/resumable/?key=one.bin", as: "alice", body: [7], headers: [Self.v(6), ("Upload-Complete", "?1")])
        #expect(whole.status == 201 && whole.headers["upload-offset"] == "1" && whole.headers["location"] != nil)
        #expect(rig.objects.object("private/alice/one.bin") == [7])
        let empty = try await rig.send(
            "POST", "/v1/resumable/?key=zero.bin", as: "alice", headers: [Self.v(3), ("Upload-Incomplete", "?0")])
        #expect(empty.status == 201 && empty.headers["upload-offset"] == "0")
        #expect(rig.objects.object("private/alice/zero.bin") == [])
    }

    @Test func aWrongOffsetIs409WithTheRightOne() async throws {
        let rig = try RouteRig()
        let created = try await rig.send(
            "POST", "/v1/resumable/?key=o.bin", as: "alice", body: Array("abcd".utf8), headers: [Self.v(6), ("Upload-Complete", "?0")])
        let path = try Self.path(created.headers["location"])
        let wrong = try await rig.send(
            "PATCH", path, as: "alice", body: Array("x".utf8),
            headers: [Self.v(6), Self.partial, ("Upload-Offset", "2"), ("Upload-Complete", "?0")])
        #expect(wrong.status == 409 && wrong.code == "offset_mismatch")
        #expect(wrong.headers["upload-offset"] == "4" && wrong.headers["upload-complete"] == "?0")
        #expect(wrong.json["expected-offset"] as? Int == 4 && wrong.json["provided-offset"] as? Int == 2)
    }

    @Test func cancellationEndsTheUpload() async throws {
        let rig = try RouteRig()
        let created = try await rig.send(
            "POST", "/v1/resumable/?key=c.bin", as: "alice", body: Array("ab".utf8), headers: [Self.v(6), ("Upload-Complete", "?0")])
        let path = try Self.path(created.headers["location"])
        #expect(try await rig.send("HEAD", path, as: "bob", headers: [Self.v(6)]).status == 404, "someone else's upload")
        #expect(try await rig.send("DELETE", path, as: "alice", headers: [Self.v(6)]).status == 204)
        let gone = try await rig.send("HEAD", path, as: "alice", headers: [Self.v(6)])
        #expect(gone.status == 404 && gone.code == "not_found")
        #expect(try await rig.send("DELETE", path, as: "alice", headers: [Self.v(6)]).status == 404)
    }

    @Test func withoutAVersionTheCreationIsAnOrdinaryUpload() async throws {
        let rig = try RouteRig()
        let plain = try await rig.send("POST", "/v1/resumable/?key=p.bin", as: "alice", body: Array("xyz".utf8))
        #expect(plain.status == 201 && plain.json["state"] as? String == "completed")
        #expect(rig.objects.object("private/alice/p.bin") == Array("xyz".utf8))
        let partial = try await rig.send(
            "POST", "/v1/resumable/?key=q.bin", as: "alice", body: Array("x".utf8),
            headers: [("Upload-Draft-Interop-Version", "5"), ("Upload-Complete", "?0")])
        #expect(partial.status == 400 && partial.code == "interop_version_unsupported")
    }

    @Test(
        arguments: [
            ("/v1/resumable/?key=r.bin", [v(6)], "validation_failed"),  // no Upload-Complete
            ("/v1/resumable/?key=r.bin", [v(6), ("Upload-Complete", "yes")], "validation_failed"),
            ("/v1/resumable/?key=r.bin", [v(6), ("Upload-Complete", "?1"), ("Upload-Length", "5")], "length_mismatch"),
            ("/v1/resumable/?key=r.bin", [v(6), ("Upload-Complete", "?1"), ("Upload-Offset", "0")], "validation_failed"),
            ("/v1/resumable/", [v(6), ("Upload-Complete", "?1")], "validation_failed"),  // no key
            ("/v1/resumable/?key=r.bin&color=red", [v(6), ("Upload-Complete", "?1")], "unknown_field"),
            ("/v1/resumable/?key=r.bin&accessLevel=secret", [v(6), ("Upload-Complete", "?1")], "validation_failed"),
            ("/v1/resumable/?key=../r.bin", [v(6), ("Upload-Complete", "?1")], "invalid_key"),
            // An ordinary upload (no version) is whole: an Upload-Length it sends must be its length.
            ("/v1/resumable/?key=r.bin", [("Upload-Length", "5")], "length_mismatch"),
            ("/v1/resumable/?key=r.bin", [("Upload-Incomplete", "AAA")], "validation_failed"),
            ("/v1/resumable/?key=r.bin", [("Upload-Complete", "1")], "validation_failed"),
        ] as [(String, [(String, String)], String)])
    func creationRefusals(target: String, headers: [(String, String)], code: String) async throws {
        let rig = try RouteRig()
        let answer = try await rig.send("POST", target, as: "alice", body: Array("abc".utf8), headers: headers)
        #expect(answer.code == code, "\(answer.json)")
        #expect(try await rig.store.list(owner: "alice", state: nil, kind: nil, limit: 10, after: nil).isEmpty, "nothing made")
    }

    /// OPTIONS gives the limits in the version asked for, and refuses one the gateway does not
    /// speak, as every other request does.
    @Test func optionsGivesTheLimitsOrRefusesAnUnknownVersion() async throws {
        let rig = try RouteRig()
        let six = try await rig.send("OPTIONS", "/v1/resumable/", headers: [Self.v(6)])
        #expect(six.status == 204 && six.headers["upload-limit"]?.contains("expires=") == true, "\(six.headers)")
        let plain = try await rig.send("OPTIONS", "/v1/resumable/")
        #expect(plain.status == 204 && plain.headers["upload-limit"]?.contains("max-age=") == true)
        for bad in ["-58800", "2", "x"] {
            let refused = try await rig.send("OPTIONS", "/v1/resumable/", headers: [("Upload-Draft-Interop-Version", bad)])
            #expect(refused.status == 400 && refused.code == "interop_version_unsupported", "\(bad): \(refused.json)")
        }
    }

    @Test func appendRefusals() async throws {
        let rig = try RouteRig()
        let created = try await rig.send(
            "POST", "/v1/resumable/?key=s.bin", as: "alice", body: Array("ab".utf8),
            headers: [Self.v(6), ("Upload-Complete", "?0"), ("Upload-Length", "4")])
        let path = try Self.path(created.headers["location"])
        let untyped = try await rig.send(
            "PATCH", path, as: "alice", body: [1], headers: [Self.v(6), ("Upload-Offset", "2"), ("Upload-Complete", "?0")])
        #expect(untyped.status == 415 && untyped.code == "unsupported_media_type")
        let short = try await rig.send(
            "PATCH", path, as: "alice", body: [1], headers: [Self.v(6), Self.partial, ("Upload-Offset", "2"), ("Upload-Complete", "?1")])
        #expect(short.status == 400 && short.code == "length_mismatch")
        let unsaid = try await rig.send("PATCH", path, as: "alice", body: [1], headers: [Self.v(6), Self.partial, ("Upload-Offset", "2")])
        #expect(unsaid.code == "validation_failed")
        let unknown = try await rig.send("HEAD", path, as: "alice", headers: [("Upload-Draft-Interop-Version", "4")])
        #expect(unknown.code == "interop_version_unsupported")
        let offsetOnHead = try await rig.send("HEAD", path, as: "alice", headers: [Self.v(6), ("Upload-Offset", "2")])
        #expect(offsetOnHead.code == "validation_failed")
        #expect(try await rig.send("HEAD", path, headers: [Self.v(6)]).status == 401)
    }
}

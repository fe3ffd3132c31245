import Foundation
import TestSupport
import Testing
import TransferEngine

@testable import Gateway

/// `/v1/objects`, download jobs, strict bodies and idempotency keys through the real router
/// over in-memory ports.
@Suite struct ObjectRoutesTests {
    @Test func objectsAreListedByPageUnderTheCallersLevel() async throws {
        let rig = try RouteRig()
        for name in ["a", "b", "c"] { rig.objects.put("private/alice/docs/\(name).txt", Array(name.utf8)) }
        rig.objects.put("private/bob/docs/x.txt", [1])
        let first = try await rig.send("GET", "/v1/objects?accessLevel=private&prefix=docs/&limit=2", as: "alice")
        let keys = (first.json["objects"] as? [[String: Any]] ?? []).compactMap { $0["key"] as? String }
        #expect(keys == ["docs/a.txt", "docs/b.txt"], "\(first.json)")
        // Listed in whole seconds, shown with milliseconds like every other moment of the API.
        let moments = (first.json["objects"] as? [[String: Any]] ?? []).compactMap { $0["lastModified"] as? String }
        #expect(moments == ["2026-12-01T18:30:02.000Z", "2026-12-01T18:30:02.000Z"], "\(first.json)")
        let cursor = try #require(first.json["nextCursor"] as? String)
        let second = try await rig.send("GET", "/v1/objects?accessLevel=private&prefix=docs/&limit=2&cursor=\(cursor)", as: "alice")
        #expect((second.json["objects"] as? [[String: Any]] ?? []).compactMap { $0["key"] as? String } == ["docs/c.txt"])
        #expect(second.json["nextCursor"] is NSNull)
        #expect(try await rig.send("GET", "/v1/objects?accessLevel=private&targetIdentityId=bob", as: "alice").status == 403)
        let unknown = try await rig.send("GET", "/v1/objects?accessLevel=private&colour=red", as: "alice")
        #expect(unknown.status == 400 && unknown.code == "unknown_field")
        #expect(try await rig.send("GET", "/v1/objects?accessLevel=private&limit=0", as: "alice").code == "validation_failed")
    }

    /// `delimiter=/` lists one folder level: `folders` beside `objects`, both in the caller's key
    /// space, paged together; a folder ending a page is passed over whole by the next.
    @Test func aDelimiterListsFoldersBesideObjects() async throws {
        let rig = try RouteRig()
        for name in ["a.txt", "photos/1.jpg", "photos/2.jpg", "photos/2026/x.jpg", "z.txt", "zip/1"] {
            rig.objects.put("private/alice/\(name)", [1])
        }
        rig.objects.put("private/bob/secret/1", [1])
        func page(_ query: String) async throws -> (objects: [String], folders: [String], next: String?) {
            let answer = try await rig.send("GET", "/v1/objects?accessLevel=private&delimiter=/\(query)", as: "alice")
            #expect(answer.status == 200, "\(answer.json)")
            return (
                (answer.json["objects"] as? [[String: Any]] ?? []).compactMap { $0["key"] as? String },
                answer.json["folders"] as? [String] ?? ["missing"], answer.json["nextCursor"] as? String
            )
        }
        let first = try await page("&limit=2")
        #expect(first.objects == ["a.txt"] && first.folders == ["photos/"] && first.next == "photos/")
        let second = try await page("&limit=2&cursor=photos/")
        #expect(second.objects == ["z.txt"] && second.folders == ["zip/"] && second.next == nil, "\(second)")
        let inside = try await page("&prefix=photos/")
        #expect(inside.objects == ["photos/1.jpg", "photos/2.jpg"] && inside.folders == ["photos/2026/"])
        let flat = try await rig.send("GET", "/v1/objects?accessLevel=private", as: "alice")
        #expect(flat.json["folders"] == nil && (flat.json["objects"] as? [Any])?.count == 6, "without a delimiter, as before")
        let other = try await rig.send("GET", "/v1/objects?accessLevel=private&delimiter=%2C", as: "alice")
        #expect(other.status == 400 && other.code == "validation_failed")
    }

    /// Up to 1,000 keys of one level deleted at once: each key answered on its own (a key the
    /// rules refuse is an error, a missing one is deleted already), another's level is 403.
    @Test func manyKeysAreDeletedAtOnceEachAnswered() async throws {
        let rig = try RouteRig()
        for name in ["a", "b"] { rig.objects.put("private/alice/d/\(name)", [1]) }
        rig.objects.put("private/bob/d/a", [1])
        let answer = try await rig.send(
            "POST", "/v1/objects/delete", as: "alice",
            json: ["accessLevel": "private", "keys": ["d/a", "d/b", "d/missing", "d/\u{FFFE}", "d/a"]])
        #expect(answer.status == 200, "\(answer.json)")
        #expect(answer.json["deleted"] as? [String] == ["d/a", "d/b", "d/missing"], "\(answer.json)")
        let errors = answer.json["errors"] as? [[String: Any]] ?? []
        #expect(errors.count == 1 && errors.first?["key"] as? String == "d/\u{FFFE}")
        #expect(errors.first?["code"] as? String == "invalid_key", "\(errors)")
        #expect(rig.objects.object("private/alice/d/a") == nil && rig.objects.object("private/alice/d/b") == nil)
        #expect(rig.objects.object("private/bob/d/a") != nil)
        let protected = try await rig.send(
            "POST", "/v1/objects/delete", as: "alice",
            json: ["accessLevel": "protected", "targetIdentityId": "bob", "keys": ["d/a"]])
        #expect(protected.status == 403)
        let tooMany = try await rig.send(
            "POST", "/v1/objects/delete", as: "alice", json: ["accessLevel": "private", "keys": (0...1000).map { "k\($0)" }])
        #expect(tooMany.status == 400 && tooMany.code == "validation_failed")
        #expect(try await rig.send("POST", "/v1/objects/delete", as: "alice", json: ["accessLevel": "private", "keys": []]).status == 400)
    }

    /// A move copies to the destination and deletes the source, under the write rules of both;
    /// the 403 cases leave both as they were.
    @Test func aMoveTakesTheObjectUnderBothLevelsRules() async throws {
        let rig = try RouteRig()
        rig.objects.put("private/alice/draft.txt", Array("text".utf8), attributes: ObjectAttributesSpec(contentType: "text/plain"))
        rig.objects.put("protected/bob/shared.txt", [9])
        func move(_ source: [String: Any], _ destination: [String: Any]) async throws -> RouteRig.Answer {
            try await rig.send("POST", "/v1/objects/move", as: "alice", json: ["source": source, "destination": destination])
        }
        let moved = try await move(
            ["accessLevel": "private", "key": "draft.txt"], ["accessLevel": "protected", "key": "final/report.txt"])
        #expect(moved.status == 200 && moved.json["objectKey"] as? String == "protected/alice/final/report.txt", "\(moved.json)")
        #expect(moved.json["size"] as? Int == 4)
        #expect(rig.objects.object("private/alice/draft.txt") == nil)
        #expect(rig.objects.object("protected/alice/final/report.txt") == Array("text".utf8))
        // Another's protected object may be read, not taken away; nor may anything be moved into
        // another's level.
        let taking = try await move(
            ["accessLevel": "protected", "key": "shared.txt", "targetIdentityId": "bob"], ["accessLevel": "private", "key": "mine.txt"])
        #expect(taking.status == 403 && rig.objects.object("protected/bob/shared.txt") == [9])
        let giving = try await move(
            ["accessLevel": "protected", "key": "final/report.txt"],
            ["accessLevel": "protected", "key": "x.txt", "targetIdentityId": "bob"])
        #expect(giving.status == 403 && rig.objects.object("protected/alice/final/report.txt") != nil)
        #expect(try await move(["accessLevel": "private", "key": "gone.txt"], ["accessLevel": "private", "key": "y.txt"]).status == 404)
        let same = try await move(
            ["accessLevel": "protected", "key": "final/report.txt"], ["accessLevel": "protected", "key": "final/report.txt"])
        #expect(
            same.status == 200 && rig.objects.object("protected/alice/final/report.txt") == Array("text".utf8), "onto itself: done already")
        let extra = try await move(["accessLevel": "private", "key": "a", "colour": "red"], ["accessLevel": "private", "key": "b"])
        #expect(extra.status == 400 && extra.code == "unknown_field")
    }

    /// Deletes (one, many) and moves are told in the event feed, `object.deleted` and
    /// `object.moved`, to the caller and to the owner of each key space touched; a refused
    /// change tells nothing.
    @Test func deletesAndMovesAreToldInTheEventFeed() async throws {
        let rig = try RouteRig()
        for name in ["one", "two", "three", "four"] { rig.objects.put("private/alice/\(name)", [1, 2, 3]) }
        #expect(try await rig.send("DELETE", "/v1/objects?accessLevel=private&key=one", as: "alice").status == 204)
        let many = try await rig.send(
            "POST", "/v1/objects/delete", as: "alice", json: ["accessLevel": "private", "keys": ["two", "three"]])
        #expect(many.status == 200)
        let moved = try await rig.send(
            "POST", "/v1/objects/move", as: "alice",
            json: ["source": ["accessLevel": "private", "key": "four"], "destination": ["accessLevel": "public", "key": "shared/four"]])
        #expect(moved.status == 200)
        #expect(try await rig.send("DELETE", "/v1/objects?accessLevel=private&key=four", as: "alice").status == 404)
        #expect(try await rig.send("DELETE", "/v1/objects?accessLevel=public&key=shared/four", as: "bob").status == 204)
        let answer = try await rig.send("GET", "/v1/events?since=0", as: "alice", headers: [("Accept", "application/json")])
        let events = answer.json["events"] as? [[String: Any]] ?? []
        #expect(
            events.map { $0["type"] as? String } == ["object.deleted", "object.deleted", "object.deleted", "object.moved"], "\(answer.json)"
        )
        let first = events.first?["data"] as? [String: Any] ?? [:]
        #expect(first["accessLevel"] as? String == "private" && first["key"] as? String == "one", "\(first)")
        #expect(first["identityId"] as? String == "alice" && first["objectKey"] as? String == "private/alice/one")
        let move = events.last?["data"] as? [String: Any] ?? [:]
        #expect((move["source"] as? [String: Any])?["key"] as? String == "four", "\(move)")
        let destination = move["destination"] as? [String: Any] ?? [:]
        #expect(destination["objectKey"] as? String == "public/shared/four" && destination["identityId"] == nil)
        #expect(move["size"] as? Int == 3 && move["etag"] as? String == moved.json["etag"] as? String)
        // Bob deleted a public object: his feed hears of it, Alice's does not.
        let bobs = try await rig.feed.events(owner: "bob", after: 0, limit: 10)
        #expect(bobs.map(\.type) == ["object.deleted"])
        #expect(try await rig.feed.latest(owner: "alice") == 4)
    }

    @Test func propertiesAndDeleteFollowTheRules() async throws {
        let rig = try RouteRig()
        rig.objects.put(
            "protected/alice/p.txt", Array("hi".utf8),
            attributes: ObjectAttributesSpec(contentType: "text/plain", cacheControl: "no-cache", metadata: ["k": "v"]))
        let seen = try await rig.send("GET", "/v1/objects/properties?accessLevel=protected&key=p.txt&targetIdentityId=alice", as: "bob")
        #expect(seen.status == 200 && seen.json["contentType"] as? String == "text/plain" && seen.json["size"] as? Int == 2)
        #expect(seen.json["metadata"] as? [String: String] == ["k": "v"] && seen.json["cacheControl"] as? String == "no-cache")
        #expect(try await rig.send("DELETE", "/v1/objects?accessLevel=protected&key=p.txt&targetIdentityId=alice", as: "bob").status == 403)
        #expect(try await rig.send("DELETE", "/v1/objects?accessLevel=protected&key=p.txt", as: "alice").status == 204)
        #expect(rig.objects.object("protected/alice/p.txt") == nil)
        #expect(try await rig.send("DELETE", "/v1/objects?accessLevel=protected&key=p.txt", as: "alice").status == 404)
        #expect(try await rig.send("GET", "/v1/objects/properties?accessLevel=protected&key=p.txt", as: "alice").status == 404)
    }

    @Test func aDownloadJobPinsTheObjectAndCarriesALink() async throws {
        let rig = try RouteRig { $0.linkSecret = Array("route-tests-link-secret".utf8) }
        rig.objects.put("private/alice/song.mp3", [1, 2, 3], attributes: ObjectAttributesSpec(contentType: "audio/mpeg"))
        let created = try await rig.send(
            "POST", "/v1/jobs", as: "alice",
            json: [
                "type": "download", "source": ["accessLevel": "private", "key": "song.mp3"], "filename": "song.mp3",
            ])
        #expect(created.status == 201 && created.json["state"] as? String == "completed", "\(created.json)")
        #expect(created.json["etag"] as? String == InMemoryObjectStore.etag([1, 2, 3]) && created.json["bytesTotal"] as? Int == 3)
        let link = try #require(created.json["dataUrl"] as? String)
        #expect(link.hasPrefix("http://rig/v1/jobs/\(created.json["id"] as? String ?? "")/data?expires=") && link.contains("&signature="))
        let missing = try await rig.send(
            "POST", "/v1/jobs", as: "alice",
            json: [
                "type": "download", "source": ["accessLevel": "private", "key": "none"],
            ])
        #expect(missing.status == 404)
        let badName = try await rig.send(
            "POST", "/v1/jobs", as: "alice",
            json: [
                "type": "download", "source": ["accessLevel": "private", "key": "song.mp3"], "filename": "a/b",
            ])
        #expect(badName.code == "validation_failed")
        let tampered = try await rig.send("GET", "/v1/jobs/\(created.json["id"] as? String ?? "")/data?expires=9999999999&signature=00")
        #expect(tampered.status == 403)
    }

    @Test func bodiesAreStrictOnEveryRoute() async throws {
        let rig = try RouteRig()
        let cases: [(String, [String: Any], String)] = [
            ("/v1/jobs", ["type": "upload", "accessLevel": "private", "key": "k", "extra": 1], "unknown_field"),
            (
                "/v1/jobs", ["type": "download", "source": ["accessLevel": "private", "key": "k"], "concurrency": 2], "option_not_supported"
            ),
            ("/v1/jobs", ["type": "upload", "accessLevel": "private", "key": "k", "filename": "f"], "option_not_supported"),
            (
                "/v1/jobs",
                [
                    "type": "import", "sourceUrl": "https://e.com/", "accessLevel": "private", "key": "k",
                    "source": ["accessLevel": "private", "key": "k"],
                ], "option_not_supported"
            ),
            ("/v1/jobs", ["type": "upload", "accessLevel": "private", "key": "k", "kmsKeyId": "key-1"], "validation_failed"),
            ("/v1/uploads", ["accessLevel": "private", "key": "k", "size": 1, "extra": true], "unknown_field"),
            ("/v1/presign", ["operation": "get", "accessLevel": "private", "key": "k", "metadata": ["a": "b"]], "option_not_supported"),
            ("/v1/presign", ["operation": "put", "accessLevel": "private", "key": "k", "expires": 5], "unknown_field"),
            ("/v1/presign/post", ["accessLevel": "private", "key": "k", "maxsize": 5], "unknown_field"),
        ]
        for (path, body, code) in cases {
            let answer = try await rig.send("POST", path, as: "alice", json: body)
            #expect(answer.status == 400 && answer.code == code, "\(path) \(body): \(answer.status) \(answer.json)")
        }
        let accepted = try await rig.send(
            "POST", "/v1/jobs", as: "alice",
            json: [
                "type": "upload", "accessLevel": "private", "key": "k", "serverSideEncryption": "aws:kms", "kmsKeyId": "key-1",
                "cacheControl": "no-cache", "contentDisposition": "inline", "metadata": ["a": "b"], "bandwidthLimit": 100,
            ])
        #expect(accepted.status == 201, "\(accepted.json)")
    }

    @Test func anIdempotencyKeyMakesOneJobPerIdentityAndBody() async throws {
        let rig = try RouteRig()
        let body: [String: Any] = ["type": "upload", "accessLevel": "private", "key": "once", "size": 5]
        let first = try await rig.send("POST", "/v1/jobs", as: "alice", json: body, headers: [("Idempotency-Key", "k-1")])
        let again = try await rig.send("POST", "/v1/jobs", as: "alice", json: body, headers: [("Idempotency-Key", "k-1")])
        #expect(first.status == 201 && again.status == 201 && first.json["id"] as? String == again.json["id"] as? String)
        #expect(again.headers["idempotent-replayed"] == "true" && again.headers["location"] == first.headers["location"])
        let reused = try await rig.send(
            "POST", "/v1/jobs", as: "alice", json: ["type": "upload", "accessLevel": "private", "key": "other"],
            headers: [("Idempotency-Key", "k-1")])
        #expect(reused.status == 422 && reused.code == "idempotency_key_reused")
        let bobs = try await rig.send("POST", "/v1/jobs", as: "bob", json: body, headers: [("Idempotency-Key", "k-1")])
        #expect(bobs.status == 201 && bobs.json["id"] as? String != first.json["id"] as? String)
        let refused = try await rig.send(
            "POST", "/v1/jobs", as: "alice", json: ["type": "upload", "accessLevel": "private", "key": "x", "size": -1],
            headers: [("Idempotency-Key", "k-2")])
        #expect(refused.status == 400)
        let fixed = try await rig.send(
            "POST", "/v1/jobs", as: "alice", json: ["type": "upload", "accessLevel": "private", "key": "x"],
            headers: [("Idempotency-Key", "k-2")])
        #expect(fixed.status == 201, "a refused request keeps nothing under its key")
        #expect(try await rig.send("POST", "/v1/jobs", as: "alice", json: body, headers: [("Idempotency-Key", "bad key")]).status == 400)
        let listed = try await rig.send("GET", "/v1/jobs?type=upload", as: "alice")
        #expect((listed.json["jobs"] as? [Any])?.count == 2)
        #expect((try await rig.send("GET", "/v1/jobs?type=copy", as: "alice").json["jobs"] as? [Any])?.count == 0)
    }

    /// A repeated upload creation is answered from the upload as it is now: same id, part URLs
    /// signed again (nothing of the first answer was stored).
    @Test func aRepeatedUploadCreationAnswersTheSameUpload() async throws {
        let rig = try RouteRig()
        let body: [String: Any] = ["accessLevel": "private", "key": "big.bin", "size": 12 << 20]
        let first = try await rig.send("POST", "/v1/uploads", as: "alice", json: body, headers: [("Idempotency-Key", "u-1")])
        let again = try await rig.send("POST", "/v1/uploads", as: "alice", json: body, headers: [("Idempotency-Key", "u-1")])
        #expect(first.status == 201 && again.status == 201)
        #expect(again.json["uploadId"] as? String == first.json["uploadId"] as? String)
        #expect((again.json["parts"] as? [Any])?.count == 3 && again.headers["idempotent-replayed"] == "true")
        #expect(rig.objects.openUploads == 1, "one S3 upload, not two")
    }

    /// A key, prefix or identity id holding a Unicode noncharacter is 400 `invalid_key` wherever
    /// it is taken (S3 would list it as another key).
    @Test func noncharactersAreRefusedOnEveryRouteThatTakesAKey() async throws {
        let rig = try RouteRig()
        rig.objects.put("private/alice/src", [1])
        let bad = "dir/a\u{FFFE}b", badID = "bob\u{FFFF}"
        let bodies: [(String, [String: Any])] = [
            ("/v1/presign", ["operation": "put", "accessLevel": "private", "key": bad]),
            ("/v1/presign", ["operation": "get", "accessLevel": "private", "key": "a" + String(Unicode.Scalar(0xFDD0)!)]),
            ("/v1/presign", ["operation": "get", "accessLevel": "protected", "key": "f", "targetIdentityId": badID]),
            ("/v1/presign/post", ["accessLevel": "private", "key": "x\u{10FFFF}"]),
            ("/v1/uploads", ["accessLevel": "private", "key": bad, "size": 10]),
            ("/v1/jobs", ["type": "upload", "accessLevel": "private", "key": bad]),
            ("/v1/jobs", ["type": "upload", "accessLevel": "protected", "key": "k", "targetIdentityId": badID]),
            ("/v1/jobs", ["type": "import", "sourceUrl": "https://example.com/x", "accessLevel": "private", "key": bad]),
            (
                "/v1/jobs",
                [
                    "type": "copy", "source": ["accessLevel": "private", "key": bad],
                    "destination": ["accessLevel": "private", "key": "d"],
                ]
            ),
            (
                "/v1/jobs",
                [
                    "type": "copy", "source": ["accessLevel": "protected", "key": "s", "targetIdentityId": badID],
                    "destination": ["accessLevel": "private", "key": "d"],
                ]
            ),
            (
                "/v1/jobs",
                [
                    "type": "copy", "source": ["accessLevel": "private", "key": "src"],
                    "destination": ["accessLevel": "private", "key": "d\u{1FFFE}"],
                ]
            ),
            ("/v1/jobs", ["type": "download", "source": ["accessLevel": "private", "key": bad]]),
        ]
        for (path, body) in bodies {
            let answer = try await rig.send("POST", path, as: "alice", json: body)
            #expect(answer.status == 400 && answer.code == "invalid_key", "\(path) \(body): \(answer.status) \(answer.json)")
        }
        let encoded = "dir%2Fa%EF%BF%BEb", encodedID = "bob%EF%BF%BF"
        for (method, target) in [
            ("GET", "/v1/objects?accessLevel=private&prefix=\(encoded)"),
            ("GET", "/v1/objects?accessLevel=protected&targetIdentityId=\(encodedID)"),
            ("GET", "/v1/objects/properties?accessLevel=private&key=\(encoded)"),
            ("DELETE", "/v1/objects?accessLevel=private&key=\(encoded)"),
        ] {
            let answer = try await rig.send(method, target, as: "alice")
            #expect(answer.status == 400 && answer.code == "invalid_key", "\(method) \(target): \(answer.status) \(answer.json)")
        }
        let metadata = "key " + Data(bad.utf8).base64EncodedString()
        let tus = try await rig.send(
            "POST", "/v1/tus/", as: "alice",
            headers: [
                ("Tus-Resumable", "1.0.0"), ("Upload-Length", "5"),
                ("Upload-Metadata", metadata),
            ])
        #expect(tus.status == 400, "tus: \(tus.status) \(tus.json)")
        let jobs = try await rig.send("GET", "/v1/jobs", as: "alice").json["jobs"] as? [Any]
        #expect(rig.objects.openUploads == 0 && jobs?.count == 0, "nothing was made")
        let fine = try await rig.send(
            "POST", "/v1/presign", as: "alice",
            json: [
                "operation": "put", "accessLevel": "private",
                "key": "dir/a\u{FFFD}\u{FDCF}\u{FDF0}\u{10FFFD}b",
            ])
        #expect(fine.status == 200, "the neighbours of noncharacters are keys: \(fine.json)")
    }

    /// A page whose next key is not past the key it listed after would be answered again and
    /// again: the listing stops there (502 `storage_error`).
    @Test(
        arguments: [
            ("a", nil, true), ("b", "a", true), ("a", "a", false), ("a", "b", false), ("a\u{FFFD}", "a\u{FFFE}", false),
            ("a\u{FFFE}", "a\u{FFFD}", true), ("ab", "a", true), ("a", "ab", false),
        ] as [(String, String?, Bool)])
    func aCursorMustAdvance(_ next: String, _ after: String?, _ advances: Bool) {
        #expect(ObjectRoutes.advances(next, after: after) == advances)
    }
}

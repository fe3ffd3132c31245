import Crypto
import Foundation
import TestSupport
import Testing
import TransferEngine

@testable import Gateway

/// `POST /v1/presign` and `POST /v1/presign/post` through the real router, signed by
/// `StaticPresigner` (URLs that spell out what they sign): what is signed, for whom, for how
/// long. The signatures themselves are S3Tests' and the live suite's business.
@Suite struct PresignRoutesTests {
    static func presign(_ rig: RouteRig, as subject: String? = "alice", _ body: [String: Any]) async throws -> RouteRig.Answer {
        try await rig.send("POST", "/v1/presign", as: subject, json: body)
    }

    static func post(_ rig: RouteRig, as subject: String? = "alice", _ body: [String: Any]) async throws -> RouteRig.Answer {
        try await rig.send("POST", "/v1/presign/post", as: subject, json: body)
    }

    /// Seconds from now to an answer's `expiresAt`.
    static func secondsLeft(_ answer: RouteRig.Answer) throws -> Double {
        let text = try #require(answer.json["expiresAt"] as? String)
        let format = ISO8601DateFormatter()
        format.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return try #require(format.date(from: text)).timeIntervalSinceNow
    }

    static var now: Int { Int(Date().timeIntervalSince1970) }

    @Test func aGetIsSignedForTheCallersOwnKeyWithNothingToSend() async throws {
        let rig = try RouteRig()
        let get = try await Self.presign(rig, ["operation": "get", "accessLevel": "private", "key": "notes/r e.txt"])
        #expect(get.status == 200, "\(get.json)")
        #expect(get.json["method"] as? String == "GET" && get.json["objectKey"] as? String == "private/alice/notes/r e.txt")
        #expect(get.json["url"] as? String == "https://s3.test/private/alice/notes/r%20e.txt?method=GET&expires=3000")
        #expect((get.json["headers"] as? [String: String])?.isEmpty == true)
        #expect(abs(try Self.secondsLeft(get) - 3000) < 5, "the default lifetime")
        for (operation, method) in [("head", "HEAD"), ("delete", "DELETE"), ("put", "PUT")] {
            let signed = try await Self.presign(rig, ["operation": operation, "accessLevel": "public", "key": "k"])
            #expect(signed.status == 200 && signed.json["method"] as? String == method, "\(operation)")
            #expect((signed.json["url"] as? String)?.hasPrefix("https://s3.test/public/k?method=\(method)&") == true, "\(operation)")
        }
    }

    @Test func aPutSignsTheHeadersTheClientMustSend() async throws {
        let rig = try RouteRig()
        let md5 = Data(Digest.md5(Array("hello".utf8))).base64EncodedString()
        let put = try await Self.presign(
            rig,
            [
                "operation": "put", "accessLevel": "protected", "key": "up.txt", "contentType": "text/plain", "cacheControl": "no-cache",
                "metadata": ["Origin": "web"], "contentLength": 5, "contentMD5": md5,
            ])
        #expect(put.status == 200, "\(put.json)")
        #expect(put.json["method"] as? String == "PUT" && put.json["objectKey"] as? String == "protected/alice/up.txt")
        #expect(
            put.json["headers"] as? [String: String] == [
                "Content-Type": "text/plain", "Cache-Control": "no-cache",
                "x-amz-meta-origin": "web", "Content-MD5": md5, "Content-Length": "5",
            ])
        let url = try #require(put.json["url"] as? String)
        for signed in [
            "h-content-type=text/plain", "h-cache-control=no-cache", "h-x-amz-meta-origin=web", "h-content-md5=\(md5)",
            "h-content-length=5",
        ] {
            #expect(url.contains("&\(signed)"), "\(signed) in \(url)")
        }
        // What only a put signs is refused on the others.
        let get = try await Self.presign(
            rig, ["operation": "get", "accessLevel": "protected", "key": "up.txt", "contentType": "text/plain"])
        #expect(get.status == 400 && get.code == "option_not_supported")
        for (field, value) in [("contentMD5", "not-a-digest"), ("contentLength", -1), ("contentLength", (5 << 30) + 1)] as [(String, Any)] {
            let refused = try await Self.presign(rig, ["operation": "put", "accessLevel": "protected", "key": "up.txt", field: value])
            #expect(refused.status == 400 && refused.code == "validation_failed", "\(field) \(value)")
        }
    }

    @Test func expiresInIsBoundedAndCutToTheCredentials() async throws {
        let rig = try RouteRig()
        func expires(_ value: Any) async throws -> RouteRig.Answer {
            try await Self.presign(rig, ["operation": "get", "accessLevel": "public", "key": "e", "expiresIn": value])
        }
        for lifetime in [1, 604_800] {
            let signed = try await expires(lifetime)
            #expect(signed.status == 200 && (signed.json["url"] as? String)?.hasSuffix("&expires=\(lifetime)") == true, "\(lifetime)")
            #expect(abs(try Self.secondsLeft(signed) - Double(lifetime)) < 5, "\(lifetime)")
        }
        for lifetime in [0, -5, 604_801] as [Any] {
            let refused = try await expires(lifetime)
            #expect(refused.status == 400 && refused.code == "validation_failed", "\(lifetime)")
        }
        #expect(try await expires("60").code == "invalid_json", "a number, not a string")
        // The maximum is the setting's.
        let short = try RouteRig {
            $0.presignMaxExpiry = 600
            $0.presignExpiry = 300
        }
        #expect(try await Self.presign(short, ["operation": "get", "accessLevel": "public", "key": "e", "expiresIn": 601]).status == 400)
        let fallback = try await Self.presign(short, ["operation": "get", "accessLevel": "public", "key": "e"])
        #expect((fallback.json["url"] as? String)?.hasSuffix("&expires=300") == true)
        // No URL outlives temporary credentials; once they have ended, none is signed.
        let ending = try RouteRig(presigner: StaticPresigner(credentialsExpiration: Self.now + 100))
        let cut = try await Self.presign(ending, ["operation": "get", "accessLevel": "public", "key": "e"])
        let lifetime = try #require((cut.json["url"] as? String)?.split(separator: "=").last.flatMap { Int($0) })
        #expect(cut.status == 200 && (95...100).contains(lifetime), "\(cut.json)")
        let ended = try RouteRig(presigner: StaticPresigner(credentialsExpiration: Self.now - 1))
        let refused = try await Self.presign(ended, ["operation": "get", "accessLevel": "public", "key": "e"])
        #expect(refused.status == 503 && refused.code == "service_unavailable")
        #expect(try await Self.post(ended, ["accessLevel": "public", "key": "e"]).status == 503)
    }

    @Test func accessIsRefusedWhereTheCallerMayNotGo() async throws {
        let rig = try RouteRig()
        func presign(_ subject: String?, _ operation: String, _ level: String, target: String? = nil) async throws -> (Int, String?) {
            var body: [String: Any] = ["operation": operation, "accessLevel": level, "key": "x"]
            if let target { body["targetIdentityId"] = target }
            let answer = try await Self.presign(rig, as: subject, body)
            return (answer.status, answer.code)
        }
        #expect(try await presign("bob", "get", "private", target: "alice") == (403, "forbidden"))
        #expect(try await presign("bob", "put", "protected", target: "alice") == (403, "forbidden"))
        #expect(try await presign("bob", "delete", "protected", target: "alice") == (403, "forbidden"))
        #expect(try await presign("bob", "put", "public", target: "alice") == (403, "forbidden"))
        #expect(try await presign("bob", "get", "protected", target: "alice") == (200, nil), "protected files are readable by name")
        #expect(try await presign(nil, "get", "public") == (401, "unauthorized"))
        // Guests may read public files where the setting allows it, and write nothing.
        let open = try RouteRig { $0.allowGuestRead = true }
        #expect(try await Self.presign(open, as: nil, ["operation": "get", "accessLevel": "public", "key": "x"]).status == 200)
        #expect(try await Self.presign(open, as: nil, ["operation": "put", "accessLevel": "public", "key": "x"]).status == 401)
        #expect(try await Self.presign(open, as: nil, ["operation": "get", "accessLevel": "private", "key": "x"]).status == 401)
        #expect(try await Self.post(open, as: nil, ["accessLevel": "public", "key": "x"]).status == 401)
    }

    @Test func aBadKeyOrRequestIs400() async throws {
        let rig = try RouteRig()
        for key in ["../etc/passwd", "", "/rooted", "a//b", "back\\slash", "nul\u{0}", "non\u{FFFE}character"] {
            let refused = try await Self.presign(rig, ["operation": "get", "accessLevel": "public", "key": key])
            #expect(refused.status == 400 && refused.code == "invalid_key", "\(key.debugDescription): \(refused.json)")
        }
        let target = try await Self.presign(rig, ["operation": "get", "accessLevel": "protected", "key": "x", "targetIdentityId": "a/b"])
        #expect(target.status == 400 && target.code == "invalid_key")
        let cases: [([String: Any], String)] = [
            (["operation": "copy", "accessLevel": "public", "key": "x"], "validation_failed"),
            // A field missing or of the wrong type or value set is the body's fault as JSON.
            (["operation": "get", "accessLevel": "secret", "key": "x"], "invalid_json"),
            (["operation": "get", "accessLevel": "public"], "invalid_json"),
            (["operation": "get", "accessLevel": "public", "key": "x", "bucket": "other"], "unknown_field"),
        ]
        for (body, code) in cases {
            let refused = try await Self.presign(rig, body)
            #expect(refused.status == 400 && refused.code == code, "\(body): \(refused.json)")
        }
        let notJSON = try await rig.send(
            "POST", "/v1/presign", as: "alice", body: Array("{".utf8), headers: [("Content-Type", "application/json")])
        #expect(notJSON.status == 400 && notJSON.code == "invalid_json")
    }

    /// A browser form upload: the policy pins the key, the fields and the size.
    @Test func aPostPolicyPinsTheKeyAndTheSize() async throws {
        let rig = try RouteRig()
        let form = try await Self.post(
            rig,
            [
                "accessLevel": "protected", "key": "forms/a.bin", "contentType": "image/png",
                "maxSize": 1024, "expiresIn": 120,
            ])
        #expect(form.status == 200, "\(form.json)")
        #expect(form.json["url"] as? String == "https://s3.test/" && form.json["objectKey"] as? String == "protected/alice/forms/a.bin")
        #expect(form.json["fields"] as? [String: String] == ["key": "protected/alice/forms/a.bin", "max": "1024"])
        #expect(abs(try Self.secondsLeft(form) - 120) < 5)
        let largest = try await Self.post(rig, ["accessLevel": "public", "key": "b.bin"])
        #expect(
            (largest.json["fields"] as? [String: String])?["max"] == String(min(EngineSettings().maxObjectSize, 5 << 30)),
            "no maxSize: what one POST can carry")
        for (body, code) in [
            (["accessLevel": "public", "key": "c", "maxSize": 0], "validation_failed"),
            (["accessLevel": "public", "key": "c", "maxSize": (5 << 30) + 1], "validation_failed"),
            (["accessLevel": "public", "key": "c", "expiresIn": 604_801], "validation_failed"),
            (["accessLevel": "public", "key": "../c"], "invalid_key"),
            (["accessLevel": "public", "key": "c", "operation": "put"], "unknown_field"),
        ] as [([String: Any], String)] {
            let refused = try await Self.post(rig, body)
            #expect(refused.status == 400 && refused.code == code, "\(body): \(refused.json)")
        }
        #expect(try await Self.post(rig, as: nil, ["accessLevel": "public", "key": "c"]).status == 401)
    }
}

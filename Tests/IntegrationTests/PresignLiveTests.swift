import Foundation
import Testing

@testable import Adapters
@testable import Gateway
@testable import TransferGateway

/// Presigned URLs end to end: the gateway signs, curl talks to the real SeaweedFS.
@Suite(.enabled(if: liveTestsEnabled, "set GATEWAY_LIVE_TESTS=1 (scripts/test.sh does)"), .serialized)
struct PresignLiveTests {
    @Test func ownerPutsGetsHeadsAndDeletesThroughPresignedURLs() async throws {
        let gateway = try LiveGateway()
        let alice = gateway.token("alice")
        let key = "docs/\(UUID().uuidString)/report 2026+final.txt"
        let file = FileManager.default.temporaryDirectory.appendingPathComponent(UUID().uuidString)
        try Data("hello presigned world".utf8).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }

        let put = try await gateway.request(
            "POST", "/v1/presign", token: alice,
            json: [
                "operation": "put", "accessLevel": "private", "key": key, "contentType": "text/plain",
                "metadata": ["origin": "test"], "expiresIn": 600,
            ])
        #expect(put.status == 200)
        #expect(put.json["objectKey"] as? String == "private/alice/\(key)")
        #expect(put.json["method"] as? String == "PUT")
        let headers = put.json["headers"] as? [String: String] ?? [:]
        #expect(headers["Content-Type"] == "text/plain" && headers["x-amz-meta-origin"] == "test")
        let url = try #require(put.json["url"] as? String)
        #expect(!url.contains("X-Amz-Security-Token"))
        var curlArgs = ["-X", "PUT", "--data-binary", "@\(file.path)"]
        for (name, value) in headers { curlArgs += ["-H", "\(name): \(value)"] }
        #expect(try curl(curlArgs + [url]).status == 200)
        // Without the signed headers the same URL is refused.
        #expect(try curl(["-X", "PUT", "--data-binary", "@\(file.path)", url]).status == 403)

        let get = try await gateway.request(
            "POST", "/v1/presign", token: alice,
            json: ["operation": "get", "accessLevel": "private", "key": key])
        let got = try curl([try #require(get.json["url"] as? String)])
        #expect(got.status == 200 && got.body == "hello presigned world")

        let head = try await gateway.request(
            "POST", "/v1/presign", token: alice,
            json: ["operation": "head", "accessLevel": "private", "key": key])
        #expect(try curl(["-I", try #require(head.json["url"] as? String)]).status == 200)

        let delete = try await gateway.request(
            "POST", "/v1/presign", token: alice,
            json: ["operation": "delete", "accessLevel": "private", "key": key])
        #expect(try curl(["-X", "DELETE", try #require(delete.json["url"] as? String)]).status == 204)
        #expect(try curl([try #require(get.json["url"] as? String)]).status == 404)
        await gateway.stop()
    }

    /// A get URL can ask S3 for the answer's Content-Disposition and Content-Type (signed into
    /// it: changing them breaks the signature); on any other operation they are refused.
    @Test func getURLsCarryResponseHeaderOverrides() async throws {
        let gateway = try LiveGateway()
        let alice = gateway.token("alice")
        let key = "overrides/\(UUID().uuidString).bin"
        let client = try gateway.configuration.makeS3Client()
        _ = try await client.putObject(key: "private/alice/\(key)", body: .bytes(Array("0123456789".utf8)))
        let disposition = #"attachment; filename="report 2026.csv"; filename*=UTF-8''report%202026.csv"#
        let get = try await gateway.request(
            "POST", "/v1/presign", token: alice,
            json: [
                "operation": "get", "accessLevel": "private", "key": key,
                "responseContentDisposition": disposition, "responseContentType": "text/csv",
            ])
        #expect(get.status == 200, "\(get.json)")
        let url = try #require(get.json["url"] as? String)
        let headers = try curl(["-s", "-D", "-", "-o", "/dev/null", url])
        #expect(headers.status == 200)
        let lines = headers.body.split(separator: "\r\n").map { $0.lowercased() }
        #expect(lines.contains("content-disposition: \(disposition.lowercased())"), "\(headers.body)")
        #expect(lines.contains("content-type: text/csv"), "\(headers.body)")
        let tampered = url.replacingOccurrences(of: "response-content-type=text%2Fcsv", with: "response-content-type=text%2Fhtml")
        #expect(tampered != url)
        #expect(try curl(["-o", "/dev/null", tampered]).status == 403)
        let put = try await gateway.request(
            "POST", "/v1/presign", token: alice,
            json: ["operation": "put", "accessLevel": "private", "key": key, "responseContentType": "text/csv"])
        #expect(put.status == 400 && put.json["code"] as? String == "option_not_supported", "\(put.json)")
        let control = try await gateway.request(
            "POST", "/v1/presign", token: alice,
            json: ["operation": "get", "accessLevel": "private", "key": key, "responseContentDisposition": "a\r\nSet-Cookie: x"])
        #expect(control.status == 400 && control.json["code"] as? String == "validation_failed", "\(control.json)")
        await gateway.stop()
    }

    @Test func tamperedAndExpiredURLsAreRefused() async throws {
        let gateway = try LiveGateway()
        let alice = gateway.token("alice")
        let key = "t/\(UUID().uuidString).txt"
        let put = try await gateway.request(
            "POST", "/v1/presign", token: alice,
            json: ["operation": "put", "accessLevel": "public", "key": key])
        #expect(try curl(["-X", "PUT", "--data-binary", "x", try #require(put.json["url"] as? String)]).status == 200)
        let get = try await gateway.request(
            "POST", "/v1/presign", token: alice,
            json: ["operation": "get", "accessLevel": "public", "key": key, "expiresIn": 1])
        let url = try #require(get.json["url"] as? String)
        // Another object under the same signature, and a signature off by one digit.
        #expect(try curl([url.replacingOccurrences(of: ".txt?", with: ".tx0?")]).status == 403)
        let flipped = String(url.dropLast()) + (url.hasSuffix("0") ? "1" : "0")
        #expect(try curl([flipped]).status == 403)
        // The URL lived one second: poll until S3 refuses it (bounded).
        var status = 200
        let deadline = Date().addingTimeInterval(10)
        while status == 200 && Date() < deadline {
            status = try curl([url]).status
            if status == 200 { try await Task.sleep(for: .milliseconds(250)) }
        }
        #expect(status == 403, "an expired presigned URL still worked")
        await gateway.stop()
    }

    @Test func browserFormUploadHonoursTheSizeLimit() async throws {
        let gateway = try LiveGateway()
        let alice = gateway.token("alice")
        let key = "forms/\(UUID().uuidString)/upload.bin"
        let form = try await gateway.request(
            "POST", "/v1/presign/post", token: alice,
            json: [
                "accessLevel": "protected", "key": key, "contentType": "application/octet-stream", "maxSize": 1024,
            ])
        #expect(form.status == 200)
        #expect(form.json["objectKey"] as? String == "protected/alice/\(key)")
        let url = try #require(form.json["url"] as? String)
        let fields = try #require(form.json["fields"] as? [String: String])
        let small = FileManager.default.temporaryDirectory.appendingPathComponent(UUID().uuidString)
        let large = FileManager.default.temporaryDirectory.appendingPathComponent(UUID().uuidString)
        try Data(repeating: 1, count: 1000).write(to: small)
        try Data(repeating: 2, count: 2000).write(to: large)
        defer { try? FileManager.default.removeItem(at: small); try? FileManager.default.removeItem(at: large) }
        func post(_ file: URL) throws -> Int {
            var args: [String] = []
            for name in ["key", "Content-Type", "x-amz-algorithm", "x-amz-credential", "x-amz-date", "policy", "x-amz-signature"] {
                if let value = fields[name] { args += ["-F", "\(name)=\(value)"] }
            }
            return try curl(args + ["-F", "file=@\(file.path)", url]).status
        }
        #expect(try post(large) >= 400, "S3 took a file over the policy's content-length-range")
        #expect((200..<300).contains(try post(small)))
        let get = try await gateway.request(
            "POST", "/v1/presign", token: alice,
            json: ["operation": "get", "accessLevel": "protected", "key": key])
        #expect(try curl([try #require(get.json["url"] as? String)]).body.utf8.count == 1000)
        await gateway.stop()
    }

    @Test func accessIsEnforcedAtTheAPI() async throws {
        let gateway = try LiveGateway()
        let alice = gateway.token("alice")
        let bob = gateway.token("bob")
        func presign(_ token: String?, _ body: [String: Any]) async throws -> (Int, String?) {
            let answer = try await gateway.request("POST", "/v1/presign", token: token, json: body)
            return (answer.status, answer.json["code"] as? String)
        }
        #expect(try await presign(nil, ["operation": "get", "accessLevel": "public", "key": "a"]) == (401, "unauthorized"))
        #expect(try await presign("not.a.token", ["operation": "get", "accessLevel": "public", "key": "a"]) == (401, "unauthorized"))
        #expect(
            try await presign(bob, ["operation": "get", "accessLevel": "private", "key": "a", "targetIdentityId": "alice"]) == (
                403, "forbidden"
            ))
        #expect(
            try await presign(bob, ["operation": "put", "accessLevel": "protected", "key": "a", "targetIdentityId": "alice"]) == (
                403, "forbidden"
            ))
        #expect(try await presign(bob, ["operation": "get", "accessLevel": "protected", "key": "a", "targetIdentityId": "alice"]).0 == 200)
        #expect(try await presign(alice, ["operation": "get", "accessLevel": "public", "key": "../etc/passwd"]) == (400, "invalid_key"))
        #expect(
            try await presign(alice, ["operation": "get", "accessLevel": "public", "key": "a", "expiresIn": 604_801]) == (
                400, "validation_failed"
            ))
        #expect(try await presign(alice, ["operation": "copy", "accessLevel": "public", "key": "a"]) == (400, "validation_failed"))
        #expect(try await presign(alice, ["operation": "get", "accessLevel": "secret", "key": "a"]) == (400, "invalid_json"))
        let expired = gateway.token("alice", ttl: -120)
        #expect(try await presign(expired, ["operation": "get", "accessLevel": "public", "key": "a"]) == (401, "unauthorized"))
        // No token, no log line with one.
        #expect(!gateway.logs.all.joined().contains(alice))
        await gateway.stop()

        let guests = try LiveGateway { $0.allowGuestRead = true }
        let guestGet = try await guests.request("POST", "/v1/presign", json: ["operation": "get", "accessLevel": "public", "key": "a"])
        #expect(guestGet.status == 200)
        let guestPut = try await guests.request("POST", "/v1/presign", json: ["operation": "put", "accessLevel": "public", "key": "a"])
        #expect(guestPut.status == 401)
        await guests.stop()
    }

    /// Temporary credentials (AWS_CREDENTIAL_EXPIRATION): no URL outlives them, and once they
    /// are gone presigning answers 503 rather than hand out URLs S3 will refuse.
    @Test func urlsNeverOutliveTheCredentials() async throws {
        let now = Int(Date().timeIntervalSince1970)
        let gateway = try LiveGateway { $0.s3CredentialExpiration = now + 100 }
        let token = gateway.token("alice")
        let put = try await gateway.request(
            "POST", "/v1/presign", token: token,
            json: ["operation": "put", "accessLevel": "private", "key": "short.bin"])
        let url = try #require(put.json["url"] as? String)
        let expires = try #require(URLComponents(string: url)?.queryItems?.first { $0.name == "X-Amz-Expires" }?.value)
        #expect((95...100).contains(Int(expires) ?? 0), "X-Amz-Expires=\(expires)")
        let form = try await gateway.request(
            "POST", "/v1/presign/post", token: token,
            json: ["accessLevel": "private", "key": "short.bin"])
        #expect(form.status == 200)
        let upload = try await gateway.request(
            "POST", "/v1/uploads", token: token,
            json: ["accessLevel": "private", "key": "short-\(UUID().uuidString).bin", "size": 10])
        let parts = try #require(upload.json["parts"] as? [[String: Any]])
        let partURL = try #require(parts.first?["url"] as? String)
        let partExpires = URLComponents(string: partURL)?.queryItems?.first { $0.name == "X-Amz-Expires" }?.value
        #expect((95...100).contains(Int(partExpires ?? "") ?? 0), "part X-Amz-Expires=\(partExpires ?? "-")")
        if let id = upload.json["uploadId"] as? String {
            _ = try await gateway.request("DELETE", "/v1/uploads/\(id)", token: token)
        }
        await gateway.stop()

        let expired = try LiveGateway { $0.s3CredentialExpiration = now - 10 }
        let refused = try await expired.request(
            "POST", "/v1/presign", token: expired.token("alice"),
            json: ["operation": "get", "accessLevel": "private", "key": "short.bin"])
        #expect(refused.status == 503)
        await expired.stop()
    }

    @Test func publicEndpointIsWrittenIntoURLs() async throws {
        let gateway = try LiveGateway { $0.s3PublicEndpoint = "https://files.example.com" }
        let answer = try await gateway.request(
            "POST", "/v1/presign", token: gateway.token("alice"),
            json: ["operation": "get", "accessLevel": "public", "key": "a b"])
        let url = try #require(answer.json["url"] as? String)
        #expect(url.hasPrefix("https://files.example.com/\(gateway.configuration.s3Bucket ?? "")/public/a%20b?"))
        await gateway.stop()
    }
}

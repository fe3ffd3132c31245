import Auth
import Crypto
import Foundation
import S3
import TestSupport
import Testing

@testable import Adapters
@testable import Gateway
@testable import TransferGateway

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// tus 1.0 with a real client (tuspy from PyPI) and by hand: resume with a new client, the
/// protocol's refusals, and a gateway killed between two PATCHes.
extension JobTableTests {
    @Suite struct TusLiveTests {
        static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../..").standardizedFileURL

        /// One request to a gateway on `port`: status, headers (lower-case names), body.
        static func send(
            _ method: String, port: Int, path: String, headers: [String: String], body: Data? = nil
        ) async throws
            -> (status: Int, headers: [String: String], body: Data)
        {
            var request = URLRequest(url: URL(string: "http://127.0.0.1:\(port)\(path)")!)
            request.httpMethod = method
            for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
            request.httpBody = body
            let (data, response) = try await URLSession.shared.data(for: request)
            let http = response as! HTTPURLResponse
            var lower: [String: String] = [:]
            for (name, value) in http.allHeaderFields { lower[String(describing: name).lowercased()] = String(describing: value) }
            return (http.statusCode, lower, data)
        }

        static func metadata(_ pairs: [(String, String)]) -> String {
            pairs.map { "\($0.0) \(Data($0.1.utf8).base64EncodedString())" }.joined(separator: ",")
        }

        @Test func tuspyUploadsInChunksAndResumesWithANewClient() async throws {
            let gateway = try LiveGateway()
            try await JobTableTests.retireLeftovers(PostgresPoolFor.live())
            let client = try gateway.configuration.makeS3Client()
            let folder = "tus-\(UUID().uuidString)"
            var bytes = [UInt8](repeating: 0, count: (7 << 20) + 1234)
            for i in stride(from: 0, to: bytes.count, by: 256) { bytes[i] = UInt8(truncatingIfNeeded: i >> 8) }
            let path = NSTemporaryDirectory() + "tus-\(UUID().uuidString).bin"
            try Data(bytes).write(to: URL(fileURLWithPath: path))
            defer { try? FileManager.default.removeItem(atPath: path) }

            let python = Process()
            python.executableURL = Self.root.appendingPathComponent(".venv/bin/python")
            python.arguments = [
                Self.root.appendingPathComponent("Tests/IntegrationTests/Scripts/tus_resume.py").path,
                "http://127.0.0.1:\(gateway.port)", gateway.token("alice"), path, "\(folder)/tus.bin",
            ]
            let output = Pipe(), errors = Pipe()
            python.standardOutput = output
            python.standardError = errors
            try python.run()
            let printed = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            let complaint = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            python.waitUntilExit()
            #expect(python.terminationStatus == 0, "\(complaint)")
            let id = try #require(printed.split(separator: "/").last.map { $0.trimmingCharacters(in: .whitespacesAndNewlines) })
            let job = try await gateway.request("GET", "/v1/jobs/\(id)", token: gateway.token("alice")).json
            #expect(job["state"] as? String == "completed" && job["type"] as? String == "upload", "\(job)")
            let stored = try await client.getObject(key: "private/alice/\(folder)/tus.bin", sink: .memory(limit: 16 << 20)).body
            #expect(Digest.sha256(stored) == Digest.sha256(bytes))
            await gateway.stop()
        }

        @Test func theProtocolsRefusals() async throws {
            let gateway = try LiveGateway()
            let token = gateway.token("alice")
            let port = gateway.port
            let auth = ["Authorization": "Bearer \(token)", "Tus-Resumable": "1.0.0"]
            let options = try await Self.send("OPTIONS", port: port, path: "/v1/tus/", headers: [:])
            #expect(options.status == 200 && options.headers["tus-version"] == "1.0.0")
            #expect(options.headers["tus-extension"]?.contains("checksum") == true)
            var wrongVersion = auth
            wrongVersion["Tus-Resumable"] = "0.2.2"
            #expect(try await Self.send("POST", port: port, path: "/v1/tus/", headers: wrongVersion).status == 412)
            var create = auth
            create["Upload-Length"] = "10"
            create["Upload-Metadata"] = Self.metadata([("key", "refusals-\(UUID().uuidString).txt")])
            let created = try await Self.send("POST", port: port, path: "/v1/tus/", headers: create)
            #expect(created.status == 201 && created.headers["upload-expires"] != nil)
            let location = try #require(created.headers["location"])
            var patch = auth
            patch["Content-Type"] = "application/offset+octet-stream"
            patch["Upload-Offset"] = "0"
            // Wrong media type 415, wrong offset 409, bad checksum 460 (and nothing kept).
            var plain = patch
            plain["Content-Type"] = "text/plain"
            #expect(try await Self.send("PATCH", port: port, path: location, headers: plain, body: Data("hello".utf8)).status == 415)
            var ahead = patch
            ahead["Upload-Offset"] = "3"
            #expect(try await Self.send("PATCH", port: port, path: location, headers: ahead, body: Data("hello".utf8)).status == 409)
            var badSum = patch
            badSum["Upload-Checksum"] = "sha1 " + Data(Digest.sha1(Array("other".utf8))).base64EncodedString()
            #expect(try await Self.send("PATCH", port: port, path: location, headers: badSum, body: Data("hello".utf8)).status == 460)
            var goodSum = patch
            goodSum["Upload-Checksum"] = "md5 " + Data(Digest.md5(Array("hello".utf8))).base64EncodedString()
            let first = try await Self.send("PATCH", port: port, path: location, headers: goodSum, body: Data("hello".utf8))
            #expect(first.status == 204 && first.headers["upload-offset"] == "5")
            // HEAD says where to continue; X-HTTP-Method-Override reaches PATCH through POST.
            let head = try await Self.send("HEAD", port: port, path: location, headers: auth)
            #expect(head.status == 200 && head.headers["upload-offset"] == "5" && head.headers["upload-length"] == "10")
            var overridden = patch
            overridden["Upload-Offset"] = "5"
            overridden["X-HTTP-Method-Override"] = "PATCH"
            let second = try await Self.send("POST", port: port, path: location, headers: overridden, body: Data("world!".utf8))
            #expect(second.status == 413, "past Upload-Length")
            let last = try await Self.send("POST", port: port, path: location, headers: overridden, body: Data("world".utf8))
            #expect(last.status == 204 && last.headers["upload-offset"] == "10")
            // Termination of another upload: 204, then 410.
            let other = try await Self.send("POST", port: port, path: "/v1/tus/", headers: create)
            let otherLocation = try #require(other.headers["location"])
            #expect(try await Self.send("DELETE", port: port, path: otherLocation, headers: auth).status == 204)
            #expect(try await Self.send("HEAD", port: port, path: otherLocation, headers: auth).status == 410)
            #expect(try await Self.send("HEAD", port: port, path: "/v1/tus/\(UUID().uuidString)", headers: auth).status == 404)
            await gateway.stop()
        }

        /// HEAD returns `Upload-Metadata` as the client created the upload (tus 1.0 core), after a
        /// chunk and from the record in PostgreSQL, on the real server.
        @Test func headReturnsUploadMetadataAsCreated() async throws {
            let gateway = try LiveGateway()
            let auth = ["Authorization": "Bearer \(gateway.token("alice"))", "Tus-Resumable": "1.0.0"]
            let sent =
                Self.metadata([("key", "meta-\(UUID().uuidString).txt"), ("filetype", "text/plain"), ("origin", "Zürich")])
                + ",is_confidential"
            var create = auth
            create["Upload-Length"] = "10"
            create["Upload-Metadata"] = sent
            let created = try await Self.send("POST", port: gateway.port, path: "/v1/tus/", headers: create)
            let location = try #require(created.headers["location"])
            var patch = auth
            patch["Content-Type"] = "application/offset+octet-stream"
            patch["Upload-Offset"] = "0"
            #expect(
                try await Self.send("PATCH", port: gateway.port, path: location, headers: patch, body: Data("hello".utf8)).status == 204)
            let head = try await Self.send("HEAD", port: gateway.port, path: location, headers: auth)
            #expect(head.status == 200 && head.headers["upload-metadata"] == sent, "\(head.headers)")
            #expect(try await Self.send("DELETE", port: gateway.port, path: location, headers: auth).status == 204)
            await gateway.stop()
        }

        /// Past GATEWAY_UPLOAD_TTL (its Upload-Expires) a tus upload is refused with 410, and the
        /// janitor fails its job and aborts its S3 upload: an expired upload no longer keeps one
        /// (it used to keep it for ever, owned by a job that could never finish).
        @Test func anExpiredUploadLeavesNoS3UploadBehind() async throws {
            let gateway = try LiveGateway()
            let token = gateway.token("alice")
            let auth = ["Authorization": "Bearer \(token)", "Tus-Resumable": "1.0.0"]
            let key = "tus-ttl-\(UUID().uuidString).bin"
            var create = auth
            create["Upload-Length"] = String(6 << 20)
            create["Upload-Metadata"] = Self.metadata([("key", key)])
            let created = try await Self.send("POST", port: gateway.port, path: "/v1/tus/", headers: create)
            let location = try #require(created.headers["location"])
            var patch = auth
            patch["Content-Type"] = "application/offset+octet-stream"
            patch["Upload-Offset"] = "0"
            let first = try await Self.send("PATCH", port: gateway.port, path: location, headers: patch, body: Data(count: 5 << 20))
            #expect(first.status == 204)
            let client = try gateway.configuration.makeS3Client()
            let prefix = "private/alice/\(key)"
            #expect(try await client.listMultipartUploads(prefix: prefix).count == 1, "the first part is in S3")
            let janitor = Janitor(client: client, pool: try PostgresPoolFor.live(), ttlSeconds: 3600)
            #expect(try await janitor.sweep(prefixes: [prefix]).isEmpty, "not expired yet: kept")
            #expect(try await janitor.sweep(prefixes: [prefix], now: Date().addingTimeInterval(7200)).count == 1)
            #expect(try await client.listMultipartUploads(prefix: prefix).isEmpty)
            let id = String(location.split(separator: "/").last ?? "")
            let job = try await gateway.request("GET", "/v1/jobs/\(id)", token: token)
            #expect(job.json["state"] as? String == "failed")
            #expect((job.json["error"] as? [String: Any])?["code"] as? String == "upload_expired")
            // (The gateway's own clock has not moved: its tus answers turn 410 at Upload-Expires,
            // the same created-at plus TTL the janitor goes by.)
            await gateway.stop()
        }

        @Test func aGatewayKilledBetweenTwoPatchesTakesTheNextOne() async throws {
            let environment = ProcessInfo.processInfo.environment
            let configuration = try Configuration.fromEnvironment(environment)
            let client = try configuration.makeS3Client()
            let token = TokenMinter.hs256Token(configuration, subject: "alice")
            let auth = ["Authorization": "Bearer \(token)", "Tus-Resumable": "1.0.0"]
            let key = "tus-kill-\(UUID().uuidString).bin"
            let chunk = Data(repeatingBytes(1 << 20, seed: 0, multiplier: 7))
            var create = auth
            create["Upload-Length"] = String(3 * chunk.count)
            create["Upload-Metadata"] = Self.metadata([("key", key)])
            var patch = auth
            patch["Content-Type"] = "application/offset+octet-stream"

            let first = try CrashResumeLiveTests.GatewayProcess(environment: environment)
            let created = try await Self.send("POST", port: first.port, path: "/v1/tus/", headers: create)
            let location = try #require(created.headers["location"])
            patch["Upload-Offset"] = "0"
            #expect(try await Self.send("PATCH", port: first.port, path: location, headers: patch, body: chunk).status == 204)
            first.kill()

            // The chunk below a part's size lives in PostgreSQL, not in the dead instance.
            let second = try CrashResumeLiveTests.GatewayProcess(environment: environment)
            let head = try await Self.send("HEAD", port: second.port, path: location, headers: auth)
            #expect(head.headers["upload-offset"] == String(chunk.count))
            for n in 1...2 {
                patch["Upload-Offset"] = String(n * chunk.count)
                let answer = try await Self.send("PATCH", port: second.port, path: location, headers: patch, body: chunk)
                #expect(answer.status == 204 && answer.headers["upload-offset"] == String((n + 1) * chunk.count))
            }
            let stored = try await client.getObject(key: "private/alice/\(key)", sink: .memory(limit: 8 << 20)).body
            #expect(Digest.sha256(stored) == Digest.sha256(Array(chunk) + Array(chunk) + Array(chunk)))
            second.kill()
        }
    }
}

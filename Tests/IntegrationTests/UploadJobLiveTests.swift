import Auth
import Crypto
import Foundation
import S3
import Testing

@testable import Adapters
@testable import Gateway
@testable import TransferGateway

/// `upload` jobs end to end: the bytes stream through the gateway into S3 parts.
extension JobTableTests {
    @Suite struct UploadJobLiveTests {
        static func file(_ mebibytes: Int, extra: Int = 0) throws -> (path: String, digest: [UInt8], size: Int) {
            let path = NSTemporaryDirectory() + "upload-\(UUID().uuidString).bin"
            var bytes = [UInt8](repeating: 0, count: (mebibytes << 20) + extra)
            for i in stride(from: 0, to: bytes.count, by: 512) { bytes[i] = UInt8(truncatingIfNeeded: (i >> 9) &* 29) }
            try Data(bytes).write(to: URL(fileURLWithPath: path))
            return (path, Digest.sha256(bytes), bytes.count)
        }

        func create(port: Int, token: String, key: String, size: Int?) async throws -> String {
            var body: [String: Any] = ["type": "upload", "accessLevel": "private", "key": key]
            if let size { body["size"] = size }
            let job = try await HTTP.json("POST", port: port, path: "/v1/jobs", token: token, body: body)
            return try #require(job["id"] as? String, "\(job)")
        }

        func objectDigest(_ client: S3Client, _ key: String) async throws -> [UInt8] {
            Digest.sha256(try await client.getObject(key: key, sink: .memory(limit: 256 << 20)).body)
        }

        @Test func twoHundredMiBThroughTheGatewayIsByteIdenticalInBoundedMemory() async throws {
            let environment = ProcessInfo.processInfo.environment
            let configuration = try Configuration.fromEnvironment(environment)
            try await JobTableTests.retireLeftovers(PostgresPoolFor.live())
            let client = try configuration.makeS3Client()
            let gateway = try CrashResumeLiveTests.GatewayProcess(environment: environment)
            defer { gateway.kill() }
            let token = TokenMinter.hs256Token(configuration, subject: "alice")
            let source = try Self.file(200)
            defer { try? FileManager.default.removeItem(atPath: source.path) }
            let folder = "upload-\(UUID().uuidString)"
            let id = try await create(port: gateway.port, token: token, key: "\(folder)/big.bin", size: source.size)
            let sent = try curl([
                "-X", "PUT", "-T", source.path, "-H", "Authorization: Bearer \(token)",
                "http://127.0.0.1:\(gateway.port)/v1/jobs/\(id)/data",
            ])
            #expect(sent.status == 200, "\(sent.body)")
            #expect(sent.body.contains(#""state":"completed""#))
            #expect(try await objectDigest(client, "private/alice/\(folder)/big.bin") == source.digest)
            // Peak resident memory of the whole gateway process: 64 MiB plus the parts in flight
            // (5 × 5 MiB) and the one being filled, whatever the file's size.
            let status = try String(contentsOfFile: "/proc/\(gateway.process.processIdentifier)/status", encoding: .utf8)
            let peakKiB =
                Int(
                    status.split(separator: "\n").first { $0.hasPrefix("VmHWM:") }?
                        .split(separator: " ").dropFirst().first ?? "") ?? .max
            #expect(peakKiB < (64 + 6 * 5) * 1024, "peak RSS \(peakKiB) KiB")
            #expect(try await client.listMultipartUploads(prefix: "private/alice/\(folder)/").isEmpty)
        }

        @Test func anUploadCutOffMidBodyResumesAtBytesCommitted() async throws {
            let gateway = try LiveGateway()
            try await JobTableTests.retireLeftovers(PostgresPoolFor.live())
            let client = try gateway.configuration.makeS3Client()
            let token = gateway.token("alice")
            let source = try Self.file(12, extra: 5)
            defer { try? FileManager.default.removeItem(atPath: source.path) }
            let folder = "upload-\(UUID().uuidString)"
            let id = try await create(port: gateway.port, token: token, key: "\(folder)/cut.bin", size: source.size)
            // A client sends the head and 7 MiB + 3 bytes of a 12 MiB body, then its connection dies.
            let cut = (7 << 20) + 3
            let script = """
                import socket, sys, time
                data = open(sys.argv[1], 'rb').read()
                s = socket.create_connection(('127.0.0.1', int(sys.argv[2])))
                s.sendall(('PUT /v1/jobs/%s/data HTTP/1.1\\r\\nHost: t\\r\\nAuthorization: Bearer %s\\r\\nContent-Length: %d\\r\\n\\r\\n'
                           % (sys.argv[3], sys.argv[4], len(data))).encode())
                s.sendall(data[:int(sys.argv[5])])
                time.sleep(0.3)
                s.close()
                """
            let python = Process()
            python.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
            python.arguments = ["-c", script, source.path, String(gateway.port), id, token, String(cut)]
            try python.run()
            python.waitUntilExit()
            // Every byte that arrived is kept: one part in S3, the rest as the tail in PostgreSQL.
            var job: [String: Any] = [:]
            let deadline = Date().addingTimeInterval(15)
            while (job["state"] as? String) != "pending" || (job["bytesCommitted"] as? Int ?? 0) < cut, Date() < deadline {
                job = try await gateway.request("GET", "/v1/jobs/\(id)", token: token).json
                try await Task.sleep(for: .milliseconds(50))
            }
            #expect(job["bytesCommitted"] as? Int == cut, "\(job)")
            #expect(job["partsCompleted"] as? Int == 1)
            // A wrong offset is refused with the right one.
            let wrong = try await gateway.request(
                "PATCH", "/v1/jobs/\(id)/data", token: token, rawBody: Data([1, 2]),
                headers: ["Upload-Offset": "5", "Content-Type": "application/offset+octet-stream"])
            #expect(wrong.status == 409 && wrong.json["code"] as? String == "offset_mismatch")
            #expect(wrong.headers["Upload-Offset"] as? String == String(cut))
            let rest = try Data(contentsOf: URL(fileURLWithPath: source.path)).subdata(in: cut..<source.size)
            let resumed = try await gateway.request(
                "PATCH", "/v1/jobs/\(id)/data", token: token, rawBody: rest,
                headers: ["Upload-Offset": String(cut), "Content-Type": "application/offset+octet-stream"])
            #expect(resumed.status == 200 && resumed.json["state"] as? String == "completed", "\(resumed.json)")
            #expect(try await objectDigest(client, "private/alice/\(folder)/cut.bin") == source.digest)
            await gateway.stop()
        }

        @Test func smallUnknownSizeAndOversizedUploads() async throws {
            let gateway = try LiveGateway()
            let client = try gateway.configuration.makeS3Client()
            let token = gateway.token("alice")
            let folder = "upload-\(UUID().uuidString)"
            // Smaller than a part: one PutObject, no multipart upload.
            let small = try await create(port: gateway.port, token: token, key: "\(folder)/small.txt", size: 11)
            let put = try await gateway.request("PUT", "/v1/jobs/\(small)/data", token: token, rawBody: Data("hello world".utf8))
            #expect(put.status == 200 && put.json["state"] as? String == "completed" && put.json["partsCompleted"] as? Int == 1)
            #expect(try await client.getObject(key: "private/alice/\(folder)/small.txt").body == Array("hello world".utf8))
            // No size declared: the body's end is the object's end (here a chunked body from curl).
            let source = try Self.file(6, extra: 77)
            defer { try? FileManager.default.removeItem(atPath: source.path) }
            let open = try await create(port: gateway.port, token: token, key: "\(folder)/open.bin", size: nil)
            let chunked = try curl([
                "-X", "PUT", "-T", source.path, "-H", "Transfer-Encoding: chunked", "-H", "Authorization: Bearer \(token)",
                "http://127.0.0.1:\(gateway.port)/v1/jobs/\(open)/data",
            ])
            #expect(chunked.status == 200 && chunked.body.contains(#""state":"completed""#), "\(chunked.body)")
            #expect(try await objectDigest(client, "private/alice/\(folder)/open.bin") == source.digest)
            // More bytes than declared: 413, nothing completed.
            let tight = try await create(port: gateway.port, token: token, key: "\(folder)/tight.bin", size: 4)
            let over = try await gateway.request("PUT", "/v1/jobs/\(tight)/data", token: token, rawBody: Data("too many".utf8))
            #expect(over.status == 413 && over.json["code"] as? String == "payload_too_large")
            #expect(try await gateway.request("GET", "/v1/jobs/\(tight)", token: token).json["state"] as? String == "pending")
            // Fewer bytes than declared: the upload waits at what it got.
            let short = try await gateway.request("PUT", "/v1/jobs/\(tight)/data", token: token, rawBody: Data("ab".utf8))
            #expect(short.status == 200 && short.json["state"] as? String == "pending" && short.json["bytesCommitted"] as? Int == 2)
            // Someone else's upload is not found; a copy job has no data to send.
            #expect(
                try await gateway.request("PUT", "/v1/jobs/\(tight)/data", token: gateway.token("bob"), rawBody: Data("x".utf8)).status
                    == 404)
            await gateway.stop()
        }
    }
}

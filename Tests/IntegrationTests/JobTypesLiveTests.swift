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

/// Each job type end to end at 100 MiB against the real PostgreSQL and SeaweedFS, checked by
/// SHA-256: copy, import (from a presigned URL that serves ranges, and from a plain HTTP server
/// that does not), download (served back with Range and ETag); and the private-network block.
extension JobTableTests {
    @Suite struct JobTypesLiveTests {
        static let size = 100 << 20

        /// 100 MiB that differ in every 64 KiB block.
        static func body() -> [UInt8] {
            var bytes = [UInt8](repeating: 0, count: size)
            for i in stride(from: 0, to: size, by: 4096) { bytes[i] = UInt8(truncatingIfNeeded: (i >> 12) &* 13) }
            return bytes
        }

        typealias Setup = JobsLiveSetup

        func setup(allowLoopback: Bool = true) async throws -> Setup {
            try await .start(folderPrefix: "types", allowLoopback: allowLoopback)
        }

        func teardown(_ s: Setup) async { await s.stop() }

        func run(_ s: Setup, _ body: [String: Any]) async throws -> [String: Any] { try await s.run(body) }

        func objectDigest(_ s: Setup, _ key: String) async throws -> [UInt8] {
            Digest.sha256(try await s.client.getObject(key: "private/alice/\(s.folder)/\(key)", sink: .memory(limit: 128 << 20)).body)
        }

        @Test func copyOf100MiBIsByteIdentical() async throws {
            let s = try await setup()
            let bytes = Self.body()
            _ = try await s.client.putObject(key: "private/alice/\(s.folder)/src.bin", body: .bytes(bytes))
            let job = try await run(
                s,
                [
                    "type": "copy", "source": ["accessLevel": "private", "key": "\(s.folder)/src.bin"],
                    "destination": ["accessLevel": "private", "key": "\(s.folder)/dst.bin"],
                ])
            #expect(job["state"] as? String == "completed", "\(job)")
            #expect(job["partsTotal"] as? Int == 20)
            #expect(try await objectDigest(s, "dst.bin") == Digest.sha256(bytes))
            await teardown(s)
        }

        @Test func importFromAPresignedURLUsesRangesAndIsByteIdentical() async throws {
            let s = try await setup()
            let bytes = Self.body()
            let sourceKey = "private/alice/\(s.folder)/src.bin"
            _ = try await s.client.putObject(key: sourceKey, body: .bytes(bytes))
            let url = s.client.presignedURL(method: "GET", key: sourceKey, expires: 600)
            let job = try await run(
                s,
                [
                    "type": "import", "sourceUrl": url, "accessLevel": "private", "key": "\(s.folder)/imported.bin",
                    "concurrency": 4,
                ])
            #expect(job["state"] as? String == "completed", "\(job)")
            #expect(job["partsTotal"] as? Int == 20)
            #expect(try await objectDigest(s, "imported.bin") == Digest.sha256(bytes))
            #expect(try await s.client.listMultipartUploads(prefix: "private/alice/\(s.folder)/").isEmpty)
            await teardown(s)
        }

        @Test func importFromAServerWithoutRangesIsByteIdentical() async throws {
            let s = try await setup()
            let bytes = Self.body()
            let directory = NSTemporaryDirectory() + "import-src-" + UUID().uuidString
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            try Data(bytes).write(to: URL(fileURLWithPath: directory + "/src.bin"))
            let server = try PlainHTTPServer(directory: directory)
            defer { server.stop() }
            let job = try await run(
                s,
                [
                    "type": "import", "sourceUrl": "http://127.0.0.1:\(server.port)/src.bin",
                    "accessLevel": "private", "key": "\(s.folder)/imported.bin",
                ])
            #expect(job["state"] as? String == "completed", "\(job)")
            #expect(try await objectDigest(s, "imported.bin") == Digest.sha256(bytes))
            // The spooled body is gone once the object is in.
            let spool = try FileManager.default.contentsOfDirectory(atPath: s.gateway.configuration.spoolDirectory)
            #expect(spool.isEmpty, "\(spool)")
            await teardown(s)
        }

        /// An IPv6 literal (allowed here, as loopback is for these tests): checked like any address,
        /// fetched without a DNS pin (libcurl refuses `[host]:port:[address]`).
        @Test func importFromAnIPv6LiteralWorks() async throws {
            let s = try await setup()
            let bytes = Array(Self.body().prefix(3 << 20))
            let directory = NSTemporaryDirectory() + "import-v6-" + UUID().uuidString
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            try Data(bytes).write(to: URL(fileURLWithPath: directory + "/src.bin"))
            let server = try PlainHTTPServer(directory: directory, bind: "::1")
            defer { server.stop() }
            let job = try await run(
                s,
                [
                    "type": "import", "sourceUrl": "http://[::1]:\(server.port)/src.bin",
                    "accessLevel": "private", "key": "\(s.folder)/v6.bin",
                ])
            #expect(job["state"] as? String == "completed", "\(job)")
            #expect(try await objectDigest(s, "v6.bin") == Digest.sha256(bytes))
            await teardown(s)
        }

        @Test func downloadIsServedWithRangesAndETag() async throws {
            let s = try await setup()
            let bytes = Self.body()
            _ = try await s.client.putObject(key: "private/alice/\(s.folder)/obj.bin", body: .bytes(bytes))
            let job = try await run(s, ["type": "download", "source": ["accessLevel": "private", "key": "\(s.folder)/obj.bin"]])
            #expect(job["state"] as? String == "completed", "\(job)")
            let id = try #require(job["id"] as? String)
            let etag = try #require(job["etag"] as? String)
            let path = "/v1/jobs/\(id)/data"

            // The whole object, through curl (an outside client), byte-identical.
            let file = NSTemporaryDirectory() + "download-\(UUID().uuidString)"
            defer { try? FileManager.default.removeItem(atPath: file) }
            let whole = try curl(["-o", file, "-H", "Authorization: Bearer \(s.token)", "http://127.0.0.1:\(s.gateway.port)\(path)"])
            #expect(whole.status == 200)
            #expect(Digest.sha256(Array(try Data(contentsOf: URL(fileURLWithPath: file)))) == Digest.sha256(bytes))

            let range = try await s.gateway.request("GET", path, token: s.token, headers: ["Range": "bytes=5242879-5243902"])
            #expect(range.status == 206)
            #expect(Array(range.body) == Array(bytes[5_242_879...5_243_902]))
            #expect(range.headers["Content-Range"] as? String == "bytes 5242879-5243902/\(Self.size)")
            let suffix = try await s.gateway.request("GET", path, token: s.token, headers: ["Range": "bytes=-10"])
            #expect(suffix.status == 206 && Array(suffix.body) == Array(bytes.suffix(10)))
            let beyond = try await s.gateway.request("GET", path, token: s.token, headers: ["Range": "bytes=\(Self.size)-"])
            #expect(beyond.status == 416 && beyond.json["code"] as? String == "range_not_satisfiable")
            let cached = try await s.gateway.request("GET", path, token: s.token, headers: ["If-None-Match": etag])
            #expect(cached.status == 304)
            let stale = try await s.gateway.request("GET", path, token: s.token, headers: ["Range": "bytes=0-9", "If-Range": "\"other\""])
            #expect(stale.status == 200, "If-Range with another ETag gets the whole object")
            // Another user cannot see it.
            #expect(try await s.gateway.request("GET", path, token: s.gateway.token("bob")).status == 404)
            await teardown(s)
        }

        @Test func aRedirectToAForbiddenAddressIsRefusedAndTheDecoyNeverContacted() async throws {
            // A decoy on loopback that counts its visitors, and an allowed host that redirects to it.
            let script = """
                import http.server, sys
                hits = open(sys.argv[3], 'a')
                class H(http.server.BaseHTTPRequestHandler):
                    def do_GET(self):
                        if sys.argv[1] == 'decoy':
                            hits.write('hit\\n'); hits.flush()
                            self.send_response(200); self.send_header('Content-Length', '6'); self.end_headers(); self.wfile.write(b'secret')
                        else:
                            self.send_response(302); self.send_header('Location', 'http://127.0.0.1:%s/latest' % sys.argv[4])
                            self.send_header('Content-Length', '0'); self.end_headers()
                    def log_message(self, *a): pass
                http.server.HTTPServer(('127.0.0.1', int(sys.argv[2])), H).serve_forever()
                """
            let hits = NSTemporaryDirectory() + "decoy-\(UUID().uuidString)"
            _ = FileManager.default.createFile(atPath: hits, contents: nil)
            let decoyPort = freeLoopbackPort(), redirectPort = freeLoopbackPort()
            var servers: [Process] = []
            for (role, port) in [("decoy", decoyPort), ("redirect", redirectPort)] {
                let p = Process()
                p.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
                p.arguments = ["-c", script, role, String(port), hits, String(decoyPort)]
                try p.run()
                servers.append(p)
            }
            defer { for p in servers { kill(p.processIdentifier, SIGKILL); p.waitUntilExit() } }
            for port in [decoyPort, redirectPort] {
                let deadline = Date().addingTimeInterval(10)
                while (try? curl(["-o", "/dev/null", "http://127.0.0.1:\(port)/ready"]))?.status ?? -1 <= 0 && Date() < deadline {
                    usleep(50_000)
                }
            }
            try Data().write(to: URL(fileURLWithPath: hits))  // the readiness probe of the decoy does not count
            let gateway = try LiveGateway { $0.importAllowHosts = ["127.0.0.1:\(redirectPort)"] }
            try await JobTableTests.retireLeftovers(PostgresPoolFor.live())
            gateway.app.worker?.start()
            let s = Setup(
                gateway: gateway, client: try gateway.configuration.makeS3Client(), token: gateway.token("alice"),
                folder: "redirect-\(UUID().uuidString)")
            let job = try await run(
                s,
                [
                    "type": "import", "sourceUrl": "http://127.0.0.1:\(redirectPort)/file",
                    "accessLevel": "private", "key": "\(s.folder)/x",
                ])
            #expect(job["state"] as? String == "failed", "\(job)")
            #expect((job["error"] as? [String: Any])?["code"] as? String == "forbidden_address", "\(job)")
            #expect(((job["error"] as? [String: Any])?["detail"] as? String)?.contains("GATEWAY_IMPORT_ALLOW_HOSTS") == true, "\(job)")
            #expect(try String(contentsOfFile: hits, encoding: .utf8).isEmpty, "the decoy was contacted")
            await teardown(s)
        }

        /// Refused at creation (400 `forbidden_address`, naming the rule and the setting that
        /// allows it), literal or resolved; no job is made.
        @Test func importsFromThePrivateNetworkAreRefusedAtCreation() async throws {
            let s = try await setup(allowLoopback: false)
            for (url, rule) in [
                ("http://127.0.0.1:1/x", "loopback"), ("http://localhost:1/x", "loopback"),
                ("http://169.254.169.254/latest/meta-data/", "link-local or cloud metadata"),
                ("http://[::1]:1/x", "loopback"), ("http://2130706433:1/x", "loopback"), ("http://10.0.0.1/x", "private network"),
            ] {
                let answer = try await s.gateway.request(
                    "POST", "/v1/jobs", token: s.token,
                    json: ["type": "import", "sourceUrl": url, "accessLevel": "private", "key": "\(s.folder)/x"])
                #expect(answer.status == 400 && answer.json["code"] as? String == "forbidden_address", "\(url): \(answer.json)")
                let detail = answer.json["detail"] as? String ?? ""
                #expect(detail.contains(rule) && detail.contains("GATEWAY_IMPORT_ALLOW_HOSTS"), "\(url): \(detail)")
            }
            let jobs = try await s.gateway.request("GET", "/v1/jobs?type=import", token: s.token).json["jobs"] as? [[String: Any]] ?? []
            #expect(!jobs.contains { ($0["objectKey"] as? String)?.contains(s.folder) == true }, "no job was made")
            await teardown(s)
        }
    }
}

/// `python3 -m http.server` on a free loopback port: a source that ignores `Range`.
final class PlainHTTPServer {
    let process = Process()
    let port: Int

    init(directory: String, bind: String = "127.0.0.1") throws {
        port = freeLoopbackPort()
        let host = bind.contains(":") ? "[\(bind)]" : bind
        process.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        process.arguments = ["-m", "http.server", "--bind", bind, "--directory", directory, String(port)]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        // Ready when it accepts a connection (bounded poll).
        let deadline = Date().addingTimeInterval(10)
        while Date() < deadline {
            if (try? curl(["-o", "/dev/null", "http://\(host):\(port)/"]))?.status == 200 { return }
            usleep(50_000)
        }
    }

    /// SIGKILL: the child may inherit a mask that blocks SIGTERM.
    func stop() {
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }
}

/// A loopback port free a moment ago (bound, read back, released), for a child server to take.
func freeLoopbackPort() -> Int {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    defer { close(fd) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) } }
    _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) } }
    return Int(UInt16(bigEndian: address.sin_port))
}

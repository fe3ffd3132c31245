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

/// `scripts/faultproxy.py` between the gateway and SeaweedFS: 503 SlowDown answers and
/// connections reset mid-answer on a share of the requests. Every job type still ends
/// byte-identical (SHA-256) within its retry limit, and with `retryLimit: 0` a part's failure
/// sends the job back to wait, its multipart upload kept (an upload request answers 503).
extension JobTableTests {
    @Suite struct S3FaultLiveTests {
        static let size = (30 << 20) + 333

        static func body() -> [UInt8] {
            var bytes = [UInt8](repeating: 0, count: size)
            for i in stride(from: 0, to: size, by: 1024) { bytes[i] = UInt8(truncatingIfNeeded: (i >> 10) &* 17) }
            return bytes
        }

        /// A gateway whose S3 traffic goes through `proxy`.
        func gateway(through proxy: FaultProxy) async throws -> LiveGateway {
            let gateway = try LiveGateway {
                $0.s3Endpoint = "http://127.0.0.1:\(proxy.port)"
                $0.importAllowHosts = ["127.0.0.1"]
                $0.leaseSeconds = 6
                $0.spoolDirectory = NSTemporaryDirectory() + "fault-spool-" + UUID().uuidString
            }
            try await JobTableTests.retireLeftovers(PostgresPoolFor.live())
            gateway.app.worker?.start()
            return gateway
        }

        /// Long-polls a job to its end (bounded).
        func finish(_ gateway: LiveGateway, _ id: String, token: String) async throws -> [String: Any] {
            var job: [String: Any] = [:]
            let deadline = Date().addingTimeInterval(180)
            while !["completed", "failed", "canceled"].contains(job["state"] as? String ?? "") && Date() < deadline {
                job = try await gateway.request("GET", "/v1/jobs/\(id)?wait=10", token: token).json
            }
            return job
        }

        enum Kind: String, CaseIterable, Sendable { case copy, `import`, download, upload }

        @Test(arguments: Kind.allCases)
        func jobsFinishByteIdenticalThroughErrorsAndResets(_ kind: Kind) async throws {
            // Downloads read with ranged GETs; the others write parts.
            let proxy = try FaultProxy(
                kind == .download
                    ? ["--method", "GET", "--error-rate", "0.2", "--reset-rate", "0.15", "--reset-after", "4000", "--seed", "7"]
                    : ["--match", "partNumber=", "--error-rate", "0.2", "--reset-rate", "0.15", "--reset-after", "100", "--seed", "7"])
            let gateway = try await gateway(through: proxy)
            let direct = try Configuration.fromEnvironment(ProcessInfo.processInfo.environment).makeS3Client()
            let token = gateway.token("alice")
            let folder = "fault-\(kind.rawValue)-\(UUID().uuidString)"
            let bytes = Self.body()
            let source = "private/alice/\(folder)/src.bin"
            if kind != .upload { _ = try await direct.putObject(key: source, body: .bytes(bytes)) }
            let options: [String: Any] = ["retryLimit": 10, "concurrency": 3]
            let id: String
            switch kind {
            case .copy, .download, .import:
                // A download takes no transfer options: its reads run when its data is fetched.
                var body = kind == .download ? [:] : options
                body["type"] = kind.rawValue
                switch kind {
                case .copy:
                    body["source"] = ["accessLevel": "private", "key": "\(folder)/src.bin"]
                    body["destination"] = ["accessLevel": "private", "key": "\(folder)/dst.bin"]
                case .download:
                    body["source"] = ["accessLevel": "private", "key": "\(folder)/src.bin"]
                default:
                    body["sourceUrl"] = direct.presignedURL(method: "GET", key: source, expires: 600)
                    body["accessLevel"] = "private"
                    body["key"] = "\(folder)/dst.bin"
                }
                let created = try await gateway.request("POST", "/v1/jobs", token: token, json: body)
                id = try #require(created.json["id"] as? String, "\(created.json)")
            case .upload:
                var body = options
                body["type"] = "upload"
                body["accessLevel"] = "private"
                body["key"] = "\(folder)/dst.bin"
                body["size"] = bytes.count
                let created = try await gateway.request("POST", "/v1/jobs", token: token, json: body)
                id = try #require(created.json["id"] as? String, "\(created.json)")
                let sent = try await gateway.request("PUT", "/v1/jobs/\(id)/data", token: token, rawBody: Data(bytes))
                #expect(sent.status == 200, "\(sent.json)")
            }
            let job = try await finish(gateway, id, token: token)
            #expect(job["state"] as? String == "completed", "\(job)")
            if kind == .download {
                let data = try await gateway.request("GET", "/v1/jobs/\(id)/data", token: token)
                #expect(Digest.sha256(Array(data.body)) == Digest.sha256(bytes))
            } else {
                let stored = try await direct.getObject(key: "private/alice/\(folder)/dst.bin", sink: .memory(limit: 64 << 20)).body
                #expect(Digest.sha256(stored) == Digest.sha256(bytes))
            }
            #expect(try await direct.listMultipartUploads(prefix: "private/alice/\(folder)/").isEmpty)
            let stats = try await proxy.stats()
            #expect((stats["errors"] ?? 0) + (stats["resets"] ?? 0) > 0, "no fault was injected: \(stats)")
            print("faultproxy \(kind.rawValue): \(stats.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " "))")
            await gateway.app.worker?.stop()
            await gateway.stop()
        }

        @Test(arguments: [Kind.copy, Kind.upload])
        func withRetryLimitZeroAPartFailureSendsTheJobBackToWaitWithItsUpload(_ kind: Kind) async throws {
            let proxy = try FaultProxy(["--match", "partNumber=", "--error-rate", "1", "--error", "503:SlowDown"])
            let gateway = try await gateway(through: proxy)
            let direct = try Configuration.fromEnvironment(ProcessInfo.processInfo.environment).makeS3Client()
            let token = gateway.token("alice")
            let folder = "fault0-\(kind.rawValue)-\(UUID().uuidString)"
            let bytes = Self.body()
            let id: String
            if kind == .copy {
                _ = try await direct.putObject(key: "private/alice/\(folder)/src.bin", body: .bytes(bytes))
                let created = try await gateway.request(
                    "POST", "/v1/jobs", token: token,
                    json: [
                        "type": "copy", "retryLimit": 0, "source": ["accessLevel": "private", "key": "\(folder)/src.bin"],
                        "destination": ["accessLevel": "private", "key": "\(folder)/dst.bin"],
                    ])
                id = try #require(created.json["id"] as? String)
            } else {
                let created = try await gateway.request(
                    "POST", "/v1/jobs", token: token,
                    json: [
                        "type": "upload", "retryLimit": 0, "accessLevel": "private", "key": "\(folder)/dst.bin", "size": bytes.count,
                    ])
                id = try #require(created.json["id"] as? String)
                // S3 is away for this request: 503 with what is committed (nothing), the job waiting for the rest.
                let sent = try await gateway.request("PUT", "/v1/jobs/\(id)/data", token: token, rawBody: Data(bytes))
                #expect(sent.status == 503 && sent.json["code"] as? String == "storage_unavailable", "\(sent.json)")
                #expect(sent.header("Upload-Offset") == "0" && sent.header("Retry-After") == "10")
            }
            // The copy goes back to wait with its upload; the upload job waits for its bytes.
            var job: [String: Any] = [:]
            let deadline = Date().addingTimeInterval(60)
            while Date() < deadline {
                job = try await gateway.request("GET", "/v1/jobs/\(id)?wait=5", token: token).json
                if kind == .upload || job["retryAt"] as? String != nil { break }
            }
            #expect(job["state"] as? String == (kind == .copy ? "queued" : "pending"), "\(job)")
            if kind == .copy {
                let last = job["lastError"] as? [String: Any]
                #expect(last?["code"] as? String == "retries_exhausted" && last?["cause"] as? String == "throttled", "\(job)")
                #expect(try await direct.listMultipartUploads(prefix: "private/alice/\(folder)/").count == 1)
            }
            // Canceled, it leaves nothing.
            _ = try await gateway.request("POST", "/v1/jobs/\(id)/cancel", token: token)
            #expect(try await direct.listMultipartUploads(prefix: "private/alice/\(folder)/").isEmpty)
            await #expect(throws: S3Error.self) { _ = try await direct.headObject(key: "private/alice/\(folder)/dst.bin") }
            await gateway.app.worker?.stop()
            await gateway.stop()
        }
    }
}

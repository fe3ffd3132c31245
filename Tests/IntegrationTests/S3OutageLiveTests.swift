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

/// S3 away for longer than a part's retries, and sources that crawl or stop.
///
/// - An outage of every S3 request (`scripts/faultproxy.py`, `POST /__outage`) in the middle of
///   an upload, a copy and an import: the copy and the import go back to `queued` with a
///   `retryAt` and a `lastError`, the uploading client gets 503 `storage_unavailable` with
///   `Retry-After` and `Upload-Offset` and sends the rest from there, all three end
///   byte-identical, and no part S3 held before the outage is sent again (counted at the proxy).
/// - `POST /v1/jobs/{id}/retry`: a job failed for good is refused (409 `job_not_retryable`); one
///   failed retryably (a short `GATEWAY_RETRY_WINDOW` during an outage) goes on from its parts.
/// - `stallTimeoutSeconds`: an import from a slow source (`scripts/slowsource.py`) completes;
///   one from a source that stops sending fails `stalled`.
extension JobTableTests {
    @Suite struct S3OutageLiveTests {
        // MARK: fixtures

        /// A gateway whose S3 traffic goes through `proxy` (straight to SeaweedFS without one).
        func gateway(through proxy: FaultProxy?, _ tweak: (inout Configuration) -> Void = { _ in }) async throws -> LiveGateway {
            let gateway = try LiveGateway {
                if let proxy { $0.s3Endpoint = "http://127.0.0.1:\(proxy.port)" }
                $0.importAllowHosts = ["127.0.0.1"]
                $0.leaseSeconds = 6
                $0.spoolDirectory = NSTemporaryDirectory() + "outage-spool-" + UUID().uuidString
                tweak(&$0)
            }
            try await JobTableTests.retireLeftovers(PostgresPoolFor.live())
            gateway.app.worker?.start()
            return gateway
        }

        func direct() throws -> S3Client {
            try Configuration.fromEnvironment(ProcessInfo.processInfo.environment).makeS3Client()
        }

        static func job(_ gateway: LiveGateway, _ id: String, token: String, wait: Int? = nil) async throws -> [String: Any] {
            try await gateway.request("GET", "/v1/jobs/\(id)" + (wait.map { "?wait=\($0)" } ?? ""), token: token).json
        }

        /// Long-polls a job to its end, or to `seconds` from now.
        static func finish(_ gateway: LiveGateway, _ id: String, token: String, within seconds: Double) async throws -> [String: Any] {
            var job: [String: Any] = [:]
            let deadline = Date().addingTimeInterval(seconds)
            while !["completed", "failed", "canceled"].contains(job["state"] as? String ?? "") && Date() < deadline {
                job = try await Self.job(gateway, id, token: token, wait: 10)
            }
            return job
        }

        /// Asks `condition` every quarter second until it holds or `seconds` pass; whether it held.
        static func poll(within seconds: Double, _ condition: () async throws -> Bool) async throws -> Bool {
            let deadline = Date().addingTimeInterval(seconds)
            while Date() < deadline {
                if try await condition() { return true }
                try await Task.sleep(for: .milliseconds(250))
            }
            return try await condition()
        }

        static func int(_ value: Any?) -> Int? { (value as? NSNumber)?.intValue }

        static func header(_ answer: LiveGateway.Answer, _ name: String) -> String? {
            answer.headers.first { ($0.key as? String)?.lowercased() == name.lowercased() }?.value as? String
        }

        /// `retryAt` and other timestamps of the API (`2026-11-29T22:50:01.123Z`).
        static func date(_ value: Any?) -> Date? {
            guard let text = value as? String else { return nil }
            let formatter = ISO8601DateFormatter()
            formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
            if let date = formatter.date(from: text) { return date }
            formatter.formatOptions = [.withInternetDateTime]
            return formatter.date(from: text)
        }

        /// SHA-256 of an object, read straight from SeaweedFS into a temporary file.
        static func sha256(of key: String, _ direct: S3Client) async throws -> [UInt8] {
            let path = NSTemporaryDirectory() + "outage-check-" + UUID().uuidString
            defer { try? FileManager.default.removeItem(atPath: path) }
            _ = try await MultipartFileTransfer(client: direct, partSize: 8 << 20, concurrency: 4).download(key: key, path: path)
            return try SHA256Stream.file(path)
        }

        /// Object key -> S3 UploadId of the multipart uploads open under `prefix`.
        static func uploadIDs(_ direct: S3Client, prefix: String) async throws -> [String: String] {
            var ids: [String: String] = [:]
            for upload in try await direct.listMultipartUploads(prefix: prefix) { ids[upload.key] = upload.uploadId }
            return ids
        }

        /// The parts of `uploadID` that S3 held when the outage began (`before`) and that were
        /// stored again since; only parts numbered up to `through`, when given.
        static func storedAgain(
            _ uploadID: String?, before: [FaultProxy.StoredPart], now: [FaultProxy.StoredPart], through: Int? = nil
        ) -> [Int] {
            let held = before.filter { $0.uploadID == uploadID && $0.partNumber <= (through ?? Int.max) }
            return held.compactMap { part in
                let later = now.first { $0.uploadID == part.uploadID && $0.partNumber == part.partNumber }
                return (later?.stored ?? 0) > part.stored ? part.partNumber : nil
            }
        }

        // MARK: the uploading client

        /// What the client of an upload job went through.
        struct UploadRun: Sendable {
            /// An answer that was not 200, as the client read it.
            struct Refusal: Sendable {
                let status: Int
                let code: String?
                let retryAfter: Int?
                let offset: Int64?
            }
            var refusals: [Refusal] = []
            /// PATCHes sent (each from an `Upload-Offset`).
            var patches = 0
            /// Requests that broke before an answer came (the gateway may answer and close
            /// before it read the whole body).
            var broken = 0
            /// The status of the last answer: 200 once every byte was taken.
            var finalStatus = 0
        }

        /// A resuming client: PUT the whole body; on 503 wait `Retry-After`, then PATCH the rest
        /// from `Upload-Offset`; on a broken request ask the job for `bytesCommitted`. Until
        /// every byte is taken, another answer refuses, or `seconds` pass.
        static func sendResuming(
            _ gateway: LiveGateway, id: String, token: String, bytes: [UInt8], within seconds: Double
        ) async throws -> UploadRun {
            var run = UploadRun()
            var offset: Int64? = nil  // nil: nothing sent yet, PUT the whole body
            let deadline = Date().addingTimeInterval(seconds)
            while Date() < deadline {
                let answer: LiveGateway.Answer
                do {
                    if let offset {
                        run.patches += 1
                        answer = try await gateway.request(
                            "PATCH", "/v1/jobs/\(id)/data", token: token, rawBody: Data(bytes[Int(offset)...]),
                            headers: ["Upload-Offset": String(offset), "Content-Type": "application/offset+octet-stream"])
                    } else {
                        answer = try await gateway.request("PUT", "/v1/jobs/\(id)/data", token: token, rawBody: Data(bytes))
                    }
                } catch {
                    run.broken += 1
                    // A client's pause before it tries again (not a wait for a condition).
                    try await Task.sleep(for: .seconds(1))
                    offset = Int64(Self.int(try await Self.job(gateway, id, token: token)["bytesCommitted"]) ?? 0)
                    continue
                }
                run.finalStatus = answer.status
                if answer.status == 200 { return run }
                let code = answer.json["code"] as? String
                let retryAfter = Self.header(answer, "Retry-After").flatMap { Int($0) }
                let told = Self.header(answer, "Upload-Offset").flatMap { Int64($0) }
                run.refusals.append(UploadRun.Refusal(status: answer.status, code: code, retryAfter: retryAfter, offset: told))
                switch (answer.status, code) {
                case (503, _):
                    // As the answer says: wait Retry-After (bounded), send from Upload-Offset.
                    try await Task.sleep(for: .seconds(min(max(retryAfter ?? 10, 1), 30)))
                case (409, "offset_mismatch"?), (409, "upload_in_progress"?):
                    // The previous request's bookkeeping may still be ending: ask again shortly.
                    try await Task.sleep(for: .seconds(1))
                default:
                    return run
                }
                if let told {
                    offset = told
                } else {
                    offset = Int64(Self.int(try await Self.job(gateway, id, token: token)["bytesCommitted"]) ?? 0)
                }
            }
            return run
        }

        // MARK: an outage in the middle of three jobs

        static let outageSize = 100 << 20
        static let outageSeconds = 60

        @Test func anOutageSendsJobsBackToWaitAndEveryJobCompletesWithoutResendingStoredParts() async throws {
            // Every part request waits a second at the proxy (two at a time per job), so the
            // 100 MiB jobs (20 parts each) are mid-way when the outage begins.
            let proxy = try FaultProxy(["--match", "partNumber=", "--delay-ms", "1000"])
            let gateway = try await gateway(through: proxy)
            let direct = try direct()
            let token = gateway.token("alice")
            let folder = "outage-\(UUID().uuidString)"
            let prefix = "private/alice/\(folder)/"
            let bytes = SlowSource.bytes(size: Self.outageSize)
            let expected = Digest.sha256(bytes)
            _ = try await direct.putObject(key: prefix + "src.bin", body: .bytes(bytes))

            let copy = try await gateway.request(
                "POST", "/v1/jobs", token: token,
                json: [
                    "type": "copy", "concurrency": 2, "source": ["accessLevel": "private", "key": "\(folder)/src.bin"],
                    "destination": ["accessLevel": "private", "key": "\(folder)/copy.bin"],
                ])
            let copyID = try #require(copy.json["id"] as? String, "\(copy.json)")
            // The import reads SeaweedFS directly (a presigned URL): only its writes meet the outage.
            let imported = try await gateway.request(
                "POST", "/v1/jobs", token: token,
                json: [
                    "type": "import", "concurrency": 2, "accessLevel": "private", "key": "\(folder)/import.bin",
                    "sourceUrl": direct.presignedURL(method: "GET", key: prefix + "src.bin", expires: 900),
                ])
            let importID = try #require(imported.json["id"] as? String, "\(imported.json)")
            let upload = try await gateway.request(
                "POST", "/v1/jobs", token: token,
                json: ["type": "upload", "concurrency": 2, "accessLevel": "private", "key": "\(folder)/upload.bin", "size": bytes.count])
            let uploadID = try #require(upload.json["id"] as? String, "\(upload.json)")
            async let uploading = Self.sendResuming(gateway, id: uploadID, token: token, bytes: bytes, within: 300)

            // The outage begins once every job has parts recorded and none has finished.
            let ids = [copyID, importID, uploadID]
            var midway = false
            let ready = try await Self.poll(within: 90) {
                var jobs: [[String: Any]] = []
                for id in ids { jobs.append(try await Self.job(gateway, id, token: token)) }
                midway = jobs.allSatisfy { ($0["state"] as? String) != "completed" }
                return jobs.allSatisfy { (Self.int($0["partsCompleted"]) ?? 0) >= 2 } || !midway
            }
            try #require(ready && midway, "the jobs were not mid-way within 90 s (or one finished before the outage)")
            let before = try await proxy.beginOutage(seconds: Self.outageSeconds)
            let outageEnds = Date().addingTimeInterval(Double(Self.outageSeconds))
            let uploads = try await Self.uploadIDs(direct, prefix: prefix)
            #expect(uploads.count == 3, "\(uploads)")

            // During the outage the copy and the import wait: queued, with when and why.
            for id in [copyID, importID] {
                var seen: [String: Any] = [:]
                while Date() < outageEnds {
                    seen = try await Self.job(gateway, id, token: token, wait: max(1, min(5, Int(outageEnds.timeIntervalSinceNow))))
                    if seen["state"] as? String == "queued", seen["retryAt"] is String, seen["lastError"] is [String: Any] { break }
                }
                #expect(seen["state"] as? String == "queued", "never seen waiting during the outage: \(seen)")
                let retryAt = Self.date(seen["retryAt"])
                #expect(retryAt != nil, "retryAt: \(seen)")
                if let retryAt {
                    // The first waits are 10 s, 20 s, 40 s (less up to a fifth): never past 5 minutes.
                    #expect(retryAt > Date().addingTimeInterval(-5) && retryAt < Date().addingTimeInterval(305), "\(seen)")
                }
                let lastError = seen["lastError"] as? [String: Any]
                #expect(!(lastError?["code"] as? String ?? "").isEmpty && lastError?["detail"] is String, "lastError: \(seen)")
                #expect((Self.int(seen["attempts"]) ?? 0) >= 1, "attempts: \(seen)")
                print("outage: \(seen["type"] ?? "") waiting: retryAt=\(seen["retryAt"] ?? "") lastError=\(lastError ?? [:])")
            }

            // Everything completes once S3 is back, byte for byte.
            let run = try await uploading
            var finished: [String: [String: Any]] = [:]
            for id in ids { finished[id] = try await Self.finish(gateway, id, token: token, within: 300) }
            for id in ids { #expect(finished[id]?["state"] as? String == "completed", "\(finished[id] ?? [:])") }
            for name in ["copy", "import", "upload"] {
                #expect(try await Self.sha256(of: prefix + "\(name).bin", direct) == expected, "\(name).bin differs")
            }
            #expect(try await direct.listMultipartUploads(prefix: prefix).isEmpty)
            // Sent back to wait at least once, so run at least twice.
            for id in [copyID, importID] { #expect((Self.int(finished[id]?["attempts"]) ?? 0) >= 2, "\(finished[id] ?? [:])") }

            // The uploading client was told to come back, and came back from Upload-Offset.
            let refusal = run.refusals.first { $0.status == 503 }
            #expect(refusal?.code == "storage_unavailable", "\(run)")
            #expect(refusal?.retryAfter != nil && refusal?.offset != nil, "\(run)")
            #expect(run.finalStatus == 200 && run.patches >= 1, "\(run)")

            // No part S3 held when the outage began was sent again. For the upload job, only the
            // parts under the Upload-Offset it was given count: parts stored past a part that
            // failed were not recorded (parts are recorded in order) and come again with the rest.
            let now = try await proxy.parts()
            for name in ["copy", "import"] {
                let id = uploads[prefix + "\(name).bin"]
                #expect(before.contains { $0.uploadID == id }, "\(name): no part stored before the outage")
                #expect(Self.storedAgain(id, before: before, now: now).isEmpty, "\(name): parts sent again")
            }
            let partSize = Self.int(finished[uploadID]?["partSize"]) ?? (5 << 20)
            let through = Int(refusal?.offset ?? 0) / partSize
            #expect(through >= 1, "the upload had no part committed at the outage: \(run)")
            let againUpload = Self.storedAgain(uploads[prefix + "upload.bin"], before: before, now: now, through: through)
            #expect(againUpload.isEmpty, "upload: parts sent again \(againUpload)")
            let stats = try await proxy.stats()
            #expect((stats["outage"] ?? 0) > 0, "\(stats)")
            print("outage: client \(run); proxy \(stats.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " "))")
            await gateway.app.worker?.stop()
            await gateway.stop()
        }

        // MARK: POST /v1/jobs/{id}/retry

        /// A copy whose source is deleted mid-job fails for good: its multipart upload is
        /// aborted, and a retry is refused and changes nothing.
        @Test func aJobFailedForGoodIsNotRetried() async throws {
            let proxy = try FaultProxy(["--match", "partNumber=", "--delay-ms", "1000"])
            let gateway = try await gateway(through: proxy)
            let direct = try direct()
            let token = gateway.token("alice")
            let folder = "noretry-\(UUID().uuidString)"
            _ = try await direct.putObject(key: "private/alice/\(folder)/src.bin", body: .bytes(SlowSource.bytes(size: 30 << 20)))
            let created = try await gateway.request(
                "POST", "/v1/jobs", token: token,
                json: [
                    "type": "copy", "concurrency": 1, "source": ["accessLevel": "private", "key": "\(folder)/src.bin"],
                    "destination": ["accessLevel": "private", "key": "\(folder)/dst.bin"],
                ])
            let id = try #require(created.json["id"] as? String, "\(created.json)")
            let started = try await Self.poll(within: 60) {
                (Self.int(try await Self.job(gateway, id, token: token)["partsCompleted"]) ?? 0) >= 1
            }
            try #require(started, "the copy recorded no part within 60 s")
            try await direct.deleteObject(key: "private/alice/\(folder)/src.bin")

            let failed = try await Self.finish(gateway, id, token: token, within: 120)
            #expect(failed["state"] as? String == "failed", "\(failed)")
            let error = failed["error"] as? [String: Any]
            #expect(error?["retryable"] as? Bool == false, "\(failed)")
            #expect(try await direct.listMultipartUploads(prefix: "private/alice/\(folder)/").isEmpty)

            let retry = try await gateway.request("POST", "/v1/jobs/\(id)/retry", token: token)
            #expect(retry.status == 409 && retry.json["code"] as? String == "job_not_retryable", "\(retry.status) \(retry.json)")
            let after = try await Self.job(gateway, id, token: token)
            #expect(after["state"] as? String == "failed", "\(after)")
            #expect(Self.int(after["attempts"]) == Self.int(failed["attempts"]), "attempts moved: \(failed) -> \(after)")
            withExtendedLifetime(proxy) {}
            await gateway.app.worker?.stop()
            await gateway.stop()
        }

        /// With a 5 s `GATEWAY_RETRY_WINDOW`, a copy caught by an outage fails retryably, keeping
        /// its multipart upload and parts; once S3 is back, `POST /retry` completes it and only
        /// the parts S3 did not hold are sent.
        @Test func aJobFailedRetryablyResumesWithRetrySendingOnlyTheMissingParts() async throws {
            let proxy = try FaultProxy(["--match", "partNumber=", "--delay-ms", "1000"])
            let gateway = try await gateway(through: proxy) { $0.retryWindow = 5 }
            let direct = try direct()
            let token = gateway.token("alice")
            let folder = "retry-\(UUID().uuidString)"
            let prefix = "private/alice/\(folder)/"
            let bytes = SlowSource.bytes(size: (40 << 20) + 333)
            _ = try await direct.putObject(key: prefix + "src.bin", body: .bytes(bytes))
            let created = try await gateway.request(
                "POST", "/v1/jobs", token: token,
                json: [
                    "type": "copy", "concurrency": 1, "source": ["accessLevel": "private", "key": "\(folder)/src.bin"],
                    "destination": ["accessLevel": "private", "key": "\(folder)/dst.bin"],
                ])
            let id = try #require(created.json["id"] as? String, "\(created.json)")
            let started = try await Self.poll(within: 60) {
                (Self.int(try await Self.job(gateway, id, token: token)["partsCompleted"]) ?? 0) >= 2
            }
            try #require(started, "the copy recorded no 2 parts within 60 s")
            // Longer than the job waits (its window is 5 s; the first wait about 10 s); ended by hand.
            let before = try await proxy.beginOutage(seconds: 600)
            let uploadID = try await Self.uploadIDs(direct, prefix: prefix)[prefix + "dst.bin"]

            let failed = try await Self.finish(gateway, id, token: token, within: 90)
            #expect(failed["state"] as? String == "failed", "\(failed)")
            let error = failed["error"] as? [String: Any]
            #expect(error?["retryable"] as? Bool == true, "\(failed)")
            // Kept for the retry: the multipart upload is still open.
            #expect(try await Self.uploadIDs(direct, prefix: prefix)[prefix + "dst.bin"] == uploadID)
            print("retry: failed with \(error ?? [:]), attempts \(failed["attempts"] ?? "")")

            try await proxy.endOutage()
            let retried = try await gateway.request("POST", "/v1/jobs/\(id)/retry", token: token)
            #expect(retried.status == 200, "\(retried.status) \(retried.json)")
            #expect(["queued", "running"].contains(retried.json["state"] as? String ?? ""), "\(retried.json)")
            let job = try await Self.finish(gateway, id, token: token, within: 120)
            #expect(job["state"] as? String == "completed", "\(job)")
            #expect(try await Self.sha256(of: prefix + "dst.bin", direct) == Digest.sha256(bytes))

            let now = try await proxy.parts()
            #expect(before.contains { $0.uploadID == uploadID }, "no part stored before the outage")
            #expect(Self.storedAgain(uploadID, before: before, now: now).isEmpty, "parts sent again")
            // Every part of the object is stored (none missing), each part number once at least.
            let partsTotal = Self.int(job["partsTotal"]) ?? 0
            #expect(Set(now.filter { $0.uploadID == uploadID }.map(\.partNumber)) == Set(1...max(1, partsTotal)), "\(now)")
            await gateway.app.worker?.stop()
            await gateway.stop()
        }

        // MARK: stallTimeoutSeconds

        /// About 1.9 MiB at 64 KiB/s: 30 s of an import where bytes keep moving, never 10 s still.
        @Test(arguments: [true, false])
        func aSlowImportWithinItsStallTimeoutCompletes(ranges: Bool) async throws {
            let source = try SlowSource(size: 30 * 65_536, rate: 65_536, ranges: ranges)
            let gateway = try await gateway(through: nil)
            let direct = try direct()
            let token = gateway.token("alice")
            let key = "slow-\(UUID().uuidString)/slow.bin"
            let began = Date()
            let created = try await gateway.request(
                "POST", "/v1/jobs", token: token,
                json: ["type": "import", "sourceUrl": source.url, "accessLevel": "private", "key": key, "stallTimeoutSeconds": 10])
            let id = try #require(created.json["id"] as? String, "\(created.json)")
            let job = try await Self.finish(gateway, id, token: token, within: 90)
            #expect(job["state"] as? String == "completed", "\(job)")
            let elapsed = Date().timeIntervalSince(began)
            #expect(elapsed > 20, "the source was not paced: \(elapsed) s")
            #expect(
                try await Self.sha256(of: "private/alice/\(key)", direct) == Digest.sha256(SlowSource.bytes(size: source.size)))
            let stats = try await source.stats()
            #expect((stats["bytesSent"] ?? 0) >= source.size, "\(stats)")
            if ranges { #expect((stats["rangeRequests"] ?? 0) >= 1, "the import did not read ranges: \(stats)") }
            print("slow import (ranges \(ranges)): \(Int(elapsed)) s, source \(stats)")
            await gateway.app.worker?.stop()
            await gateway.stop()
        }

        /// A source that stops sending (and holds its connection open) fails the import
        /// `stalled` within 15 s of its last byte with `stallTimeoutSeconds: 10`.
        @Test(arguments: [true, false])
        func anImportWhoseSourceStopsFailsStalled(ranges: Bool) async throws {
            let source = try SlowSource(size: 8 << 20, rate: 262_144, ranges: ranges, stopAfter: 1 << 20)
            let gateway = try await gateway(through: nil)
            let token = gateway.token("alice")
            let created = try await gateway.request(
                "POST", "/v1/jobs", token: token,
                json: [
                    "type": "import", "sourceUrl": source.url, "accessLevel": "private",
                    "key": "stall-\(UUID().uuidString)/stall.bin", "stallTimeoutSeconds": 10,
                ])
            let id = try #require(created.json["id"] as? String, "\(created.json)")
            let stopped = try await Self.poll(within: 30) { (try await source.stats()["stopped"] ?? 0) == 1 }
            try #require(stopped, "the source did not reach its stop within 30 s")
            let stoppedAt = Date()
            let job = try await Self.finish(gateway, id, token: token, within: 30)
            let took = Date().timeIntervalSince(stoppedAt)
            #expect(job["state"] as? String == "failed", "\(job)")
            #expect((job["error"] as? [String: Any])?["code"] as? String == "stalled", "\(job)")
            #expect(took <= 15, "failed \(took) s after the source's last byte")
            print("stalled import (ranges \(ranges)): failed \(String(format: "%.1f", took)) s after the source stopped")
            withExtendedLifetime(source) {}
            await gateway.app.worker?.stop()
            await gateway.stop()
        }
    }
}

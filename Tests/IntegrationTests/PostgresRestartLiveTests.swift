import Crypto
import Foundation
import S3
import TestSupport
import Testing

@testable import Adapters
@testable import Gateway
@testable import TransferGateway

/// PostgreSQL stopped and started again while a copy job runs and while an upload streams: the
/// API answers 503 with a problem body meanwhile, `/readyz` says so, and the job and the upload
/// then finish byte-identical with every part counted once. It restarts the shared database, so
/// it runs alone:
/// scripts/test.sh runs it in a `swift test` of its own with GATEWAY_PG_RESTART_TEST=1.
@Suite(
    .serialized,
    .enabled(
        if: ProcessInfo.processInfo.environment["GATEWAY_PG_RESTART_TEST"] == "1",
        "restarts the database: scripts/test.sh runs it alone"))
struct PostgresRestartLiveTests {
    static func restartDatabase(downFor seconds: String) throws -> Process {
        let restart = Process()
        restart.executableURL = URL(fileURLWithPath: "/bin/bash")
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../scripts/stack.sh")
            .standardizedFileURL
        restart.arguments = [script.path, "pg-restart", seconds]
        restart.standardError = FileHandle.nullDevice
        try restart.run()
        return restart
    }

    @Test func aDatabaseRestartMidJobLosesNothing() async throws {
        let gateway = try LiveGateway { $0.leaseSeconds = 2 }
        try await JobTableTests.retireLeftovers(PostgresPoolFor.live())
        gateway.app.worker?.start()
        let client = try gateway.configuration.makeS3Client()
        let token = gateway.token("alice")
        let folder = "pgrestart-\(UUID().uuidString)"
        var bytes = [UInt8](repeating: 0, count: 100 << 20)
        for i in stride(from: 0, to: bytes.count, by: 4096) { bytes[i] = UInt8(truncatingIfNeeded: (i >> 12) &* 11) }
        _ = try await client.putObject(key: "private/alice/\(folder)/src.bin", body: .bytes(bytes))
        let created = try await gateway.request(
            "POST", "/v1/jobs", token: token,
            json: [
                // 20 MiB/s: the 100 MiB copy takes ~5 s, so the outage lands mid-job.
                "type": "copy", "concurrency": 2, "bandwidthLimit": 20 << 20,
                "source": ["accessLevel": "private", "key": "\(folder)/src.bin"],
                "destination": ["accessLevel": "private", "key": "\(folder)/dst.bin"],
            ])
        let id = try #require(created.json["id"] as? String)
        var job = created.json
        let started = Date().addingTimeInterval(30)
        while (job["partsCompleted"] as? Int ?? 0) < 2 && Date() < started {
            try await Task.sleep(for: .milliseconds(20))
            job = try await gateway.request("GET", "/v1/jobs/\(id)", token: token).json
        }
        #expect((job["partsCompleted"] as? Int ?? 0) < 20, "the job finished before the outage: nothing was tested")

        // 4 s here; scripts/reliability.sh pg holds it down for 30 s (GATEWAY_PG_OUTAGE_SECONDS).
        let outage = ProcessInfo.processInfo.environment["GATEWAY_PG_OUTAGE_SECONDS"] ?? "4"
        let restart = try Self.restartDatabase(downFor: outage)
        // While it is down the API says 503 with a problem body, and /readyz names the database.
        var sawUnavailable = false, readyzSaidSo = false
        while restart.isRunning {
            let answer = try await gateway.request("GET", "/v1/jobs/\(id)", token: token)
            if answer.status == 503 && answer.json["code"] as? String == "service_unavailable" { sawUnavailable = true }
            let ready = try await gateway.request("GET", "/readyz")
            if ready.status == 503, let checks = ready.json["checks"] as? [String: Any], checks["postgres"] as? String != "ok" {
                readyzSaidSo = true
            }
            #expect(answer.status == 200 || answer.status == 503, "status \(answer.status) during the outage")
            try await Task.sleep(for: .milliseconds(100))
        }
        restart.waitUntilExit()
        #expect(restart.terminationStatus == 0)
        #expect(sawUnavailable && readyzSaidSo)
        print("pg outage: \(outage) s down; API 503 seen: \(sawUnavailable), /readyz 503 seen: \(readyzSaidSo)")

        let deadline = Date().addingTimeInterval(120)
        while !["completed", "failed", "canceled"].contains(job["state"] as? String ?? "") && Date() < deadline {
            let answer = try await gateway.request("GET", "/v1/jobs/\(id)?wait=5", token: token)
            if answer.status == 200 { job = answer.json } else { try await Task.sleep(for: .milliseconds(200)) }
        }
        #expect(job["state"] as? String == "completed", "\(job)")
        #expect(job["partsCompleted"] as? Int == 20 && job["bytesCommitted"] as? Int == bytes.count, "\(job)")
        let copied = try await client.getObject(key: "private/alice/\(folder)/dst.bin", sink: .memory(limit: 128 << 20)).body
        #expect(Digest.sha256(copied) == Digest.sha256(bytes))
        #expect(try await client.listMultipartUploads(prefix: "private/alice/\(folder)/").isEmpty)
        await gateway.app.worker?.stop()
        await gateway.stop()
    }

    /// An upload streaming when the database goes away: the request that was cut answers 503
    /// (its last part reached S3 but could not be recorded, so it is not counted), and once the
    /// database is back the client's next PATCH from `bytesCommitted` is taken at once, although
    /// the cut request's 30 s lease could not be released, and the object is byte-identical.
    @Test func anUploadCutByAnOutageResumesAtOnce() async throws {
        // 4 s in CI, 30 s from scripts/reliability.sh pg; the lease outlasts the outage, so only
        // taking back the instance's own stale lease lets the next PATCH in at once.
        let outage = ProcessInfo.processInfo.environment["GATEWAY_PG_OUTAGE_SECONDS"] ?? "4"
        let gateway = try LiveGateway { $0.leaseSeconds = max(30, 3 * (Int(outage) ?? 4)) }
        let client = try gateway.configuration.makeS3Client()
        let token = gateway.token("alice")
        let key = "pgrestart-upload-\(UUID().uuidString).bin"
        let partSize = 5 << 20
        var bytes = [UInt8](repeating: 0, count: 3 * partSize + 1234)
        for i in stride(from: 0, to: bytes.count, by: 512) { bytes[i] = UInt8(truncatingIfNeeded: (i >> 9) &* 7 &+ 1) }
        let created = try await gateway.request(
            "POST", "/v1/jobs", token: token,
            json: [
                "type": "upload", "accessLevel": "private", "key": key, "size": bytes.count,
            ])
        let id = try #require(created.json["id"] as? String)

        // One PATCH for everything; the first part and a bit go before the outage.
        let connection = try LoopbackClient(port: gateway.port)
        try connection.send(
            "PATCH /v1/jobs/\(id)/data HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer \(token)\r\n"
                + "Content-Type: application/offset+octet-stream\r\nUpload-Offset: 0\r\n"
                + "Content-Length: \(bytes.count)\r\n\r\n")
        try connection.send(bytes[..<(partSize + 4096)])
        var committed = 0
        let recorded = Date().addingTimeInterval(30)
        while committed < partSize && Date() < recorded {
            try await Task.sleep(for: .milliseconds(20))
            committed = try await gateway.request("GET", "/v1/jobs/\(id)", token: token).json["bytesCommitted"] as? Int ?? 0
        }
        #expect(committed == partSize, "the first part was recorded before the outage")

        let restart = try Self.restartDatabase(downFor: outage)
        var down = false
        while !down && restart.isRunning {
            let ready = try await gateway.request("GET", "/readyz")
            down = ready.status == 503
            if !down { try await Task.sleep(for: .milliseconds(50)) }
        }
        #expect(down, "the database never went down")
        // The rest of the body while it is down: the next part cannot be recorded.
        try connection.send(bytes[(partSize + 4096)...])
        let cut = try connection.readResponse(deadline: Date().addingTimeInterval(60))
        #expect(cut.head.status == 503, "\(cut.head.status) \(String(decoding: cut.body, as: UTF8.self))")
        restart.waitUntilExit()
        #expect(restart.terminationStatus == 0)

        // Back: the client asks where the upload stands and sends the rest from there.
        var job: [String: Any] = [:]
        let back = Date().addingTimeInterval(60)
        repeat {
            let answer = try await gateway.request("GET", "/v1/jobs/\(id)", token: token)
            if answer.status == 200 { job = answer.json; break }
            try await Task.sleep(for: .milliseconds(100))
        } while Date() < back
        let offset = try #require(job["bytesCommitted"] as? Int, "\(job)")
        #expect(offset == partSize, "only what S3 holds and the database recorded counts: \(job)")
        let resumedAt = Date()
        let rest = try await gateway.request(
            "PATCH", "/v1/jobs/\(id)/data", token: token, rawBody: Data(bytes[offset...]),
            headers: ["Content-Type": "application/offset+octet-stream", "Upload-Offset": String(offset)])
        #expect(
            rest.status == 200 && rest.json["state"] as? String == "completed",
            "the cut request's lease must not hold the upload for 30 s: \(rest.status) \(rest.json)")
        print(
            "upload through a database outage (\(outage) s): cut request \(cut.head.status), resumed at \(offset) in \(String(format: "%.2f", Date().timeIntervalSince(resumedAt))) s, completed \(rest.json["state"] ?? "?")"
        )
        let stored = try await client.getObject(key: "private/alice/\(key)", sink: .memory(limit: 32 << 20)).body
        #expect(Digest.sha256(stored) == Digest.sha256(bytes))
        #expect(try await client.listMultipartUploads(prefix: "private/alice/\(key)").isEmpty)
        await gateway.stop()
    }
}

import Crypto
import Foundation
import S3
import Testing
@testable import Gateway

/// PostgreSQL stopped and started again while a copy job runs: the API answers 503 with a
/// problem body meanwhile, `/readyz` says so, and the job then finishes byte-identical with
/// every part counted once. It restarts the shared database, so it runs alone:
/// scripts/test.sh runs it in a `swift test` of its own with GATEWAY_PG_RESTART_TEST=1.
@Suite(.enabled(if: ProcessInfo.processInfo.environment["GATEWAY_PG_RESTART_TEST"] == "1",
                "restarts the database: scripts/test.sh runs it alone"))
struct PostgresRestartLiveTests {
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
        let created = try await gateway.request("POST", "/v1/jobs", token: token, json: [
            // 20 MiB/s: the 100 MiB copy takes ~5 s, so the outage lands mid-job.
            "type": "copy", "concurrency": 2, "bandwidthLimit": 20 << 20,
            "source": ["accessLevel": "private", "key": "\(folder)/src.bin"],
            "destination": ["accessLevel": "private", "key": "\(folder)/dst.bin"]])
        let id = try #require(created.json["id"] as? String)
        var job = created.json
        let started = Date().addingTimeInterval(30)
        while (job["partsCompleted"] as? Int ?? 0) < 2 && Date() < started {
            try await Task.sleep(for: .milliseconds(20))
            job = try await gateway.request("GET", "/v1/jobs/\(id)", token: token).json
        }
        #expect((job["partsCompleted"] as? Int ?? 0) < 20, "the job finished before the outage: nothing was tested")

        let restart = Process()
        restart.executableURL = URL(fileURLWithPath: "/bin/bash")
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../scripts/stack.sh").standardizedFileURL
        // 4 s here; scripts/reliability.sh pg holds it down for 30 s (GATEWAY_PG_OUTAGE_SECONDS).
        let outage = ProcessInfo.processInfo.environment["GATEWAY_PG_OUTAGE_SECONDS"] ?? "4"
        restart.arguments = [script.path, "pg-restart", outage]
        restart.standardError = FileHandle.nullDevice
        try restart.run()
        // While it is down the API says 503 with a problem body, and /readyz names the database.
        var sawUnavailable = false, readyzSaidSo = false
        while restart.isRunning {
            let answer = try await gateway.request("GET", "/v1/jobs/\(id)", token: token)
            if answer.status == 503 && answer.json["code"] as? String == "service_unavailable" { sawUnavailable = true }
            let ready = try await gateway.request("GET", "/readyz")
            if ready.status == 503, let checks = ready.json["checks"] as? [String: Any], checks["postgres"] as? String != "ok" { readyzSaidSo = true }
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
}

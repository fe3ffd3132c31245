import Foundation
import S3
import Testing

@testable import TransferGateway

/// An in-process gateway running its worker, a direct S3 client, Alice's token and a folder of
/// her own: what the job suites share.
struct JobsLiveSetup {
    let gateway: LiveGateway
    let client: S3Client
    let token: String
    let folder: String

    var prefix: String { "private/alice/\(folder)" }

    /// Jobs left active by earlier runs are retired first, so they cannot be claimed.
    static func start(
        folderPrefix: String, allowLoopback: Bool = false,
        tweak: (inout Configuration) -> Void = { _ in }
    ) async throws -> JobsLiveSetup {
        let gateway = try LiveGateway {
            if allowLoopback { $0.importAllowHosts = ["127.0.0.1", "[::1]"] }
            $0.spoolDirectory = NSTemporaryDirectory() + "gateway-spool-" + UUID().uuidString
            tweak(&$0)
        }
        try await JobTableTests.retireLeftovers(PostgresPoolFor.live())
        gateway.app.worker?.start()
        return JobsLiveSetup(
            gateway: gateway, client: try gateway.configuration.makeS3Client(), token: gateway.token("alice"),
            folder: "\(folderPrefix)-\(UUID().uuidString)")
    }

    func stop() async {
        await gateway.app.worker?.stop()
        await gateway.app.webhooks?.stop()
        await gateway.stop()
    }

    /// Creates a job and long-polls it to its end (bounded).
    func run(_ body: [String: Any]) async throws -> [String: Any] {
        let created = try await gateway.request("POST", "/v1/jobs", token: token, json: body)
        let id = try #require(created.json["id"] as? String, "\(created.json)")
        var job = created.json
        let deadline = Date().addingTimeInterval(120)
        while !["completed", "failed", "canceled"].contains(job["state"] as? String ?? "") && Date() < deadline {
            job = try await gateway.request("GET", "/v1/jobs/\(id)?wait=10", token: token).json
        }
        return job
    }
}

import Foundation
import S3
import SigV4
import Testing

@testable import Adapters
@testable import Gateway
@testable import TransferGateway

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

extension JobTableTests {
    /// S3 credentials that end every few seconds, from stand-ins for the ECS container endpoint
    /// and for STS (scripts/credentials_standin.py, rotating among SeaweedFS identities that
    /// scripts/stack.sh adds): two gateways, one on each, sign presigned URLs (used against
    /// SeaweedFS at once), and run copy and upload jobs throughout, with one provider outage
    /// in the middle. Nothing may answer 503 or fail from ended credentials.
    ///
    /// Quick by default (credentials of 20 s, 50 s of traffic); `scripts/reliability.sh
    /// credentials [MINUTES]` runs the long scenario (credentials of 2 minutes, 8 minutes of
    /// traffic) through GATEWAY_CREDENTIALS_LIFETIME and GATEWAY_CREDENTIALS_SECONDS.
    @Suite struct CredentialRotationLiveTests {
        static let lifetime = Int(liveEnvironment["GATEWAY_CREDENTIALS_LIFETIME"] ?? "") ?? 20
        static let seconds = Int(liveEnvironment["GATEWAY_CREDENTIALS_SECONDS"] ?? "") ?? 50

        @Test func credentialsRotatingUnderTrafficFailNothing() async throws {
            let standIn = try CredentialsStandIn(lifetime: Self.lifetime)
            defer { standIn.stop() }
            let folder = NSTemporaryDirectory() + "creds-" + UUID().uuidString
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(atPath: folder) }
            try standIn.authToken.write(toFile: folder + "/pod-token", atomically: true, encoding: .utf8)
            try standIn.webToken.write(toFile: folder + "/web-token", atomically: true, encoding: .utf8)

            var container = CredentialsChainSettings()
            container.containerFullURI = "http://127.0.0.1:\(standIn.port)/ecs/credentials"
            container.containerAuthorizationTokenFile = folder + "/pod-token"
            var webIdentity = CredentialsChainSettings()
            webIdentity.webIdentityTokenFile = folder + "/web-token"
            webIdentity.roleARN = "arn:aws:iam::000000000000:role/stand-in"
            webIdentity.stsEndpoint = "http://127.0.0.1:\(standIn.port)"
            let ecs = try await Self.gateway(container, "ecs")
            let sts = try await Self.gateway(webIdentity, "sts")
            #expect(ecs.gateway.app.credentialsRefresher.sourceName == "container")
            #expect(sts.gateway.app.credentialsRefresher.sourceName == "web-identity")
            let refreshers = [ecs, sts].map { setup in Task { await setup.gateway.app.credentialsRefresher.run() } }

            let started = Date()
            // Halfway through, the providers go down from 2 s before a refresh is due for two
            // fifths of the lifetime: every refresh in that window fails, and the credentials
            // fetched last (half their lifetime left) must carry the traffic through it.
            let refresher = ecs.gateway.app.credentialsRefresher
            let outage = Task {
                try await Task.sleep(for: .seconds(Self.seconds / 2))
                let due = refresher.snapshot.nextFetch ?? 0
                let wait = Double(due - 2) - Date().timeIntervalSince1970
                if wait > 0 { try await Task.sleep(for: .milliseconds(Int(wait * 1000))) }
                try await standIn.down(seconds: Self.lifetime * 2 / 5)
            }
            async let a = RotationTraffic(setup: ecs, until: started.addingTimeInterval(Double(Self.seconds))).run()
            async let b = RotationTraffic(setup: sts, until: started.addingTimeInterval(Double(Self.seconds))).run()
            let (ecsFigures, stsFigures) = try await (a, b)
            _ = try? await outage.value
            let stats = try await standIn.stats()
            let ready = try await ecs.gateway.request("GET", "/readyz")
            let readySTS = try await sts.gateway.request("GET", "/readyz")
            refreshers.forEach { $0.cancel() }
            await ecs.stop()
            await sts.stop()

            let all = ecsFigures + stsFigures
            print(
                "credentials: lifetime \(Self.lifetime) s, traffic \(Int(Date().timeIntervalSince(started))) s: "
                    + "presigned URLs \(all.presigns) (each used: \(all.used)), copy jobs \(all.copies), upload jobs \(all.uploads), "
                    + "fetches ecs \(stats["ecs"] ?? -1) sts \(stats["sts"] ?? -1) (refused while down \(stats["down"] ?? -1)), "
                    + "keys signed with \(all.keys.count), shortest URL lifetime \(all.shortestLifetime) s, "
                    + "503s \(all.unavailable), failures \(all.failures.count)")
            #expect(all.failures.isEmpty, "\(all.failures.prefix(5))")
            #expect(all.unavailable == 0)
            #expect(all.keys.count >= 2, "the signing keys rotated")
            #expect((stats["ecs"] ?? 0) >= Self.seconds / Self.lifetime && (stats["sts"] ?? 0) >= Self.seconds / Self.lifetime)
            #expect((stats["down"] ?? 0) >= 1, "the outage was felt")
            #expect(ready.status == 200 && readySTS.status == 200, "\(ready.json) \(readySTS.json)")
            #expect(!String(decoding: ready.body, as: UTF8.self).contains(standIn.keys[0].1))
            let logs = ecs.gateway.logs.all + sts.gateway.logs.all
            #expect(logs.contains { $0.contains("last good ones stay in use") }, "the outage was logged")
            #expect(!logs.contains { line in standIn.keys.contains { line.contains($0.1) } || line.contains(standIn.authToken) })
        }

        /// A gateway on the stand-in's credentials only (no static keys), its worker running.
        static func gateway(_ chain: CredentialsChainSettings, _ name: String) async throws -> JobsLiveSetup {
            let setup = try await JobsLiveSetup.start(folderPrefix: "creds-\(name)") {
                $0.s3AccessKeyID = nil
                $0.s3SecretAccessKey = nil
                $0.s3SessionToken = nil
                $0.credentialsChain = chain
            }
            #expect(await setup.gateway.app.credentialsRefresher.refresh(), "the first credentials arrived")
            return setup
        }
    }
}

/// The stand-in credential provider: scripts/credentials_standin.py on a free loopback port,
/// handing out the SeaweedFS identities `gw-rotate-1…3` (the stack's key with R1…R3 appended,
/// its secret with r1…r3).
final class CredentialsStandIn: @unchecked Sendable {
    let process = Process()
    let port: Int
    let keys: [(String, String)]
    let authToken = "Bearer pod-" + UUID().uuidString
    let webToken = "eyJ-web-" + UUID().uuidString

    init(lifetime: Int) throws {
        let key = try #require(liveEnvironment["GATEWAY_S3_ACCESS_KEY_ID"])
        let secret = try #require(liveEnvironment["GATEWAY_S3_SECRET_ACCESS_KEY"])
        keys = (1...3).map { (key + "R\($0)", secret + "r\($0)") }
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../..").standardizedFileURL
        let portFile = NSTemporaryDirectory() + "creds-port-\(UUID().uuidString)"
        process.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        process.arguments = [root.appendingPathComponent("scripts/credentials_standin.py").path, portFile]
        process.environment = [
            "STANDIN_KEYS": keys.map { "\($0.0):\($0.1)" }.joined(separator: ","), "STANDIN_LIFETIME": String(lifetime),
            "STANDIN_AUTH_TOKEN": authToken, "STANDIN_WEB_TOKEN": webToken,
        ]
        // Not the test's own output: a child holding it open keeps `swift test` waiting.
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        let deadline = Date().addingTimeInterval(20)
        var port: Int?
        while port == nil && Date() < deadline {
            port = (try? String(contentsOfFile: portFile, encoding: .utf8)).flatMap { Int($0) }
            if port == nil { usleep(20_000) }
        }
        try? FileManager.default.removeItem(atPath: portFile)
        self.port = try #require(port, "the stand-in did not start")
    }

    /// SIGKILL: a child of the test runner may inherit a mask that blocks SIGTERM.
    func stop() { if process.isRunning { kill(process.processIdentifier, SIGKILL) } }

    /// However the test ended (a failed `#require` included), the stand-in goes with it.
    deinit { stop() }

    func stats() async throws -> [String: Int] {
        let url = URL(string: "http://127.0.0.1:\(port)/stats")!
        return (try JSONSerialization.jsonObject(with: try await URLSession.shared.data(from: url).0)) as? [String: Int] ?? [:]
    }

    func down(seconds: Int) async throws {
        var request = URLRequest(url: URL(string: "http://127.0.0.1:\(port)/down?seconds=\(seconds)")!)
        request.httpMethod = "POST"
        _ = try await URLSession.shared.data(for: request)
    }
}

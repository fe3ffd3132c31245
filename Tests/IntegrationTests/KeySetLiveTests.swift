import Foundation
import Testing

@testable import Adapters
@testable import Gateway
@testable import TransferGateway

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Tokens from an identity provider's key set (`GATEWAY_JWT_JWKS_URL`), against a stand-in
/// provider on loopback (Scripts/jwks_server.py: real RS256/ES256 keys, rotated on request) and
/// an in-process gateway: rotation without a restart, an unknown `kid` refused (and fetched for
/// at most once in 30 s), a provider that goes down leaving the last good set in use, a cold
/// start with the provider down, and Cognito- and Auth0-shaped tokens.
@Suite(.serialized) struct KeySetLiveTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../..").standardizedFileURL

    /// The stand-in provider: a python process serving on a free loopback port.
    final class Provider: @unchecked Sendable {
        let process = Process()
        let port: Int

        init() throws {
            let portFile = NSTemporaryDirectory() + "jwks-port-\(UUID().uuidString)"
            process.executableURL = KeySetLiveTests.root.appendingPathComponent(".venv/bin/python")
            process.arguments = [
                KeySetLiveTests.root.appendingPathComponent("Tests/IntegrationTests/Scripts/jwks_server.py").path, portFile,
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
            self.port = try #require(port, "the provider did not start")
        }

        deinit { process.terminate() }

        var url: String { "http://127.0.0.1:\(port)/.well-known/jwks.json" }

        func call(_ method: String, _ path: String) async throws -> String {
            var request = URLRequest(url: URL(string: "http://127.0.0.1:\(port)\(path)")!)
            request.httpMethod = method
            return String(decoding: try await URLSession.shared.data(for: request).0, as: UTF8.self)
        }

        func token(_ query: String) async throws -> String { try await call("GET", "/token?\(query)") }
        var fetches: Int { get async throws { Int(try await call("GET", "/fetches")) ?? -1 } }
    }

    /// A gateway that reads the provider's keys, its refresher running.
    func gateway(
        _ provider: Provider, _ tweak: @escaping (inout Configuration) -> Void = { _ in }
    ) throws -> (LiveGateway, Task<Void, Never>) {
        let gateway = try LiveGateway {
            $0.jwtJWKSURL = provider.url
            tweak(&$0)
        }
        let refresher = try #require(gateway.app.keySetRefresher)
        return (gateway, Task { await refresher.run() })
    }

    func status(_ gateway: LiveGateway, _ token: String) async throws -> Int {
        try await gateway.request("GET", "/v1/jobs?limit=1", token: token).status
    }

    @Test func rotatedKeysWorkWithoutARestartAndUnknownKidsAreRefused() async throws {
        let provider = try Provider()
        let (gateway, refresher) = try gateway(provider)
        #expect(try await status(gateway, try await provider.token("sub=ks-a")) == 200, "the first request waits for the set")
        let newKid = try await provider.call("POST", "/rotate?alg=RS256")
        let rotated = try await provider.token("sub=ks-b&kid=\(newKid)")
        #expect(try await status(gateway, rotated) == 200, "a token of the new key works on its first try")
        // A kid the provider never published: refused, and asks for at most one fetch in 30 s.
        let before = try await provider.fetches
        for n in 0..<5 {
            let forged = try await provider.token("sub=ks-c\(n)&kid=never-\(n)")
            let answer = try await gateway.request("GET", "/v1/jobs", token: forged)
            #expect(answer.status == 401 && answer.json["code"] as? String == "unauthorized")
        }
        #expect(try await provider.fetches - before <= 1, "unknown kids fetched the set at most once")
        refresher.cancel()
        await gateway.stop()
    }

    /// A token verified before its kid left the set is refused once the new set is fetched
    /// (the verified-token cache does not outlive the key); a token whose kid stayed works on.
    @Test func aTokenWhoseKidWasRotatedOutIsRefusedOnceTheNewSetArrives() async throws {
        let provider = try Provider()
        let leaving = try await provider.call("POST", "/rotate?alg=RS256")
        let staying = try await provider.call("POST", "/rotate?alg=ES256&keep=1")
        let (gateway, refresher) = try gateway(provider)
        let old = try await provider.token("sub=rot-a&kid=\(leaving)")
        let kept = try await provider.token("sub=rot-b&kid=\(staying)")
        #expect(try await status(gateway, old) == 200)
        #expect(try await status(gateway, kept) == 200)
        #expect(try await status(gateway, old) == 200, "answered from the verified-token cache")
        // The provider retires the old key and publishes a new one; a token of the new key makes
        // the gateway fetch the set.
        _ = try await provider.call("POST", "/retire?kid=\(leaving)")
        let newKid = try await provider.call("POST", "/rotate?alg=RS256&keep=1")
        let fetchesBefore = try await provider.fetches
        #expect(try await status(gateway, try await provider.token("sub=rot-c&kid=\(newKid)")) == 200)
        #expect(try await provider.fetches > fetchesBefore, "the new kid fetched the set")
        let refused = try await gateway.request("GET", "/v1/jobs?limit=1", token: old)
        #expect(refused.status == 401 && refused.json["code"] as? String == "unauthorized", "\(refused.status) \(refused.json)")
        #expect(try await status(gateway, old) == 401, "and stays refused")
        #expect(try await status(gateway, kept) == 200, "a token whose kid stayed keeps working")
        refresher.cancel()
        await gateway.stop()
    }

    @Test func aProviderThatGoesDownLeavesTheLastGoodSetInUse() async throws {
        let provider = try Provider()
        let (gateway, refresher) = try gateway(provider)
        #expect(try await status(gateway, try await provider.token("sub=down-a")) == 200)
        _ = try await provider.call("POST", "/down")
        // A fresh token (not in the verified cache) of a known key, and an unknown kid that asks
        // for a fetch the provider fails: the set in hand still verifies the first.
        _ = try await gateway.request("GET", "/v1/jobs", token: try await provider.token("sub=down-b&kid=gone"))
        #expect(try await status(gateway, try await provider.token("sub=down-c")) == 200)
        let ready = try await gateway.request("GET", "/readyz")
        #expect((ready.json["checks"] as? [String: String])?["jwks"] == "ok", "\(ready.json)")
        refresher.cancel()
        await gateway.stop()
    }

    @Test func aColdStartWithTheProviderDownRefusesTokensUntilTheSetArrives() async throws {
        let provider = try Provider()
        _ = try await provider.call("POST", "/down")
        let (gateway, refresher) = try gateway(provider)
        let token = try await provider.token("sub=cold-a")
        #expect(try await status(gateway, token) == 401)
        let ready = try await gateway.request("GET", "/readyz")
        #expect(ready.status == 503 && (ready.json["checks"] as? [String: String])?["jwks"] != "ok", "\(ready.json)")
        _ = try await provider.call("POST", "/up")
        // The refresher tries again every 10 s while the provider is down.
        let deadline = Date().addingTimeInterval(30)
        var answered = 401
        while answered != 200 && Date() < deadline {
            answered = try await status(gateway, token)
            if answered != 200 { try await Task.sleep(for: .milliseconds(250)) }
        }
        #expect(answered == 200)
        refresher.cancel()
        await gateway.stop()
    }

    @Test func cognitoAndAuth0ShapedTokensAreAccepted() async throws {
        let provider = try Provider()
        let (cognito, cognitoRefresher) = try gateway(provider) {
            $0.jwtAudience = "app-client"
            $0.jwtRolesClaim = "cognito:groups"
            $0.jwtAdminRole = "admins"
        }
        let access = try await provider.token("shape=cognito-access&sub=cog-user&aud=app-client")
        #expect(try await status(cognito, access) == 200, "client_id stands for the audience of an access token")
        let id = try await provider.token("shape=cognito-id&sub=cog-user&aud=app-client")
        #expect(try await status(cognito, id) == 200)
        let otherClient = try await provider.token("shape=cognito-access&sub=cog-user&aud=another-client")
        #expect(try await status(cognito, otherClient) == 401)
        // Roles from cognito:groups: an admin reads another identity's job.
        let created = try await cognito.request(
            "POST", "/v1/jobs", token: access,
            json: [
                "type": "upload", "accessLevel": "private", "key": "k.bin", "size": 1,
            ])
        let job = try #require(created.json["id"] as? String, "\(created.json)")
        let admin = try await provider.token("shape=cognito-access&sub=cog-admin&aud=app-client&admin=1")
        let user = try await provider.token("shape=cognito-access&sub=cog-other&aud=app-client")
        #expect(try await cognito.request("GET", "/v1/jobs/\(job)", token: admin).status == 200)
        #expect(try await cognito.request("GET", "/v1/jobs/\(job)", token: user).status == 404)
        _ = try await cognito.request("POST", "/v1/jobs/\(job)/cancel", token: access)

        let (auth0, auth0Refresher) = try gateway(provider) {
            $0.jwtAudience = "https://api.example"
            $0.jwtRolesClaim = "https://example.com/roles"
        }
        #expect(try await status(auth0, try await provider.token("shape=auth0&sub=auth0%7Cabc123&aud=https://api.example")) == 200)
        #expect(try await status(auth0, try await provider.token("shape=auth0&sub=auth0%7Cabc123&aud=https://other")) == 401)
        auth0Refresher.cancel()
        await auth0.stop()
        cognitoRefresher.cancel()
        await cognito.stop()
    }
}

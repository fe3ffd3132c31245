import Foundation
import Testing

@testable import TransferGateway

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// One gateway's traffic in the credential rotation test: presigned PUTs and GETs used against
/// SeaweedFS at once, and every few rounds a copy job and an upload job, until `until`.
struct RotationTraffic {
    let setup: JobsLiveSetup
    let until: Date

    /// What the traffic did, added up over gateways.
    struct Figures {
        var presigns = 0
        var used = 0
        var copies = 0
        var uploads = 0
        var unavailable = 0
        var keys = Set<String>()
        var shortestLifetime = Int.max
        var failures: [String] = []

        static func + (a: Figures, b: Figures) -> Figures {
            Figures(
                presigns: a.presigns + b.presigns, used: a.used + b.used, copies: a.copies + b.copies, uploads: a.uploads + b.uploads,
                unavailable: a.unavailable + b.unavailable, keys: a.keys.union(b.keys),
                shortestLifetime: min(a.shortestLifetime, b.shortestLifetime), failures: a.failures + b.failures)
        }
    }

    func run() async throws -> Figures {
        var figures = Figures()
        var round = 0
        while Date() < until {
            round += 1
            let key = "\(setup.folder)/r\(round).txt"
            let body = Data("round \(round) \(UUID().uuidString)".utf8)
            try await presigned("put", key: key, body: body, into: &figures)
            try await presigned("get", key: key, expect: body, into: &figures)
            if round % 8 == 1 {
                let copy = try await setup.run([
                    "type": "copy", "source": ["accessLevel": "private", "key": key],
                    "destination": ["accessLevel": "private", "key": key + ".copy"],
                ])
                figures.copies += 1
                if copy["state"] as? String != "completed" { figures.failures.append("copy: \(copy)") }
            }
            if round % 8 == 5 { try await uploadJob(key: key + ".upload", into: &figures) }
            try await Task.sleep(for: .milliseconds(250))
        }
        return figures
    }

    /// Presigns `operation` on `key`, checks the URL's lifetime against the credentials, and
    /// uses it against SeaweedFS.
    func presigned(_ operation: String, key: String, body: Data? = nil, expect: Data? = nil, into figures: inout Figures) async throws {
        let gateway = setup.gateway
        let answer = try await gateway.request(
            "POST", "/v1/presign", token: setup.token, json: ["operation": operation, "accessLevel": "private", "key": key])
        figures.presigns += 1
        guard answer.status == 200, let url = answer.json["url"] as? String, let components = URLComponents(string: url) else {
            if answer.status == 503 { figures.unavailable += 1 }
            figures.failures.append("presign \(operation) answered \(answer.status)")
            return
        }
        let query = Dictionary((components.queryItems ?? []).map { ($0.name, $0.value ?? "") }) { a, _ in a }
        let lifetime = Int(query["X-Amz-Expires"] ?? "") ?? .max
        figures.shortestLifetime = min(figures.shortestLifetime, lifetime)
        figures.keys.insert(String((query["X-Amz-Credential"] ?? "").prefix { $0 != "/" }))
        // The URL ends (X-Amz-Date + X-Amz-Expires) no later than the credentials in use (read
        // after signing: they only ever end later).
        let end = gateway.app.credentialsRefresher.snapshot.current?.expiration ?? 0
        let signedAt = Self.seconds(amzDate: query["X-Amz-Date"] ?? "") ?? .max
        if signedAt > end || lifetime > end - signedAt {
            figures.failures.append("a URL signed at \(signedAt) for \(lifetime) s outlives its credentials (ending at \(end))")
        }
        var request = URLRequest(url: URL(string: url)!)
        request.httpMethod = operation.uppercased()
        for (name, value) in answer.json["headers"] as? [String: String] ?? [:] { request.setValue(value, forHTTPHeaderField: name) }
        if let body { request.httpBody = body }
        let (data, response) = try await URLSession.shared.data(for: request)
        let status = (response as? HTTPURLResponse)?.statusCode ?? 0
        figures.used += 1
        if status == 503 { figures.unavailable += 1 }
        if status != 200 || (expect != nil && data != expect) {
            figures.failures.append("presigned \(operation) answered \(status): \(String(decoding: data.prefix(300), as: UTF8.self))")
        }
    }

    /// `yyyyMMdd'T'HHmmss'Z'` as seconds since 1970.
    static func seconds(amzDate text: String) -> Int? {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "yyyyMMdd'T'HHmmss'Z'"
        return formatter.date(from: text).map { Int($0.timeIntervalSince1970) }
    }

    /// An upload job: created, its bytes sent in one PUT, then waited for to its end.
    func uploadJob(key: String, into figures: inout Figures) async throws {
        let gateway = setup.gateway
        let bytes = Data(repeating: UInt8(ascii: "u"), count: 6 << 20)
        let created = try await gateway.request(
            "POST", "/v1/jobs", token: setup.token,
            json: ["type": "upload", "accessLevel": "private", "key": key, "size": bytes.count])
        figures.uploads += 1
        guard created.status == 201, let id = created.json["id"] as? String else {
            if created.status == 503 { figures.unavailable += 1 }
            figures.failures.append("upload job creation answered \(created.status)")
            return
        }
        let sent = try await gateway.request(
            "PUT", "/v1/jobs/\(id)/data", token: setup.token, rawBody: bytes, headers: ["Content-Type": "application/octet-stream"])
        if sent.status == 503 { figures.unavailable += 1 }
        var job = sent.json
        let deadline = Date().addingTimeInterval(60)
        while !["completed", "failed", "canceled"].contains(job["state"] as? String ?? "") && Date() < deadline {
            job = try await gateway.request("GET", "/v1/jobs/\(id)?wait=10", token: setup.token).json
        }
        if job["state"] as? String != "completed" { figures.failures.append("upload job \(sent.status): \(job)") }
    }
}

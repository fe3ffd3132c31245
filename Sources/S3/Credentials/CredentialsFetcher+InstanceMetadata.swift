import Foundation
import SigV4

extension CredentialsFetcher {
    /// IMDSv2 (Amazon EC2 User Guide, "Use the Instance Metadata Service to access instance
    /// metadata"): a session token from `PUT /latest/api/token`, then the role's name from
    /// `GET /latest/meta-data/iam/security-credentials/` and its credentials from
    /// `…/security-credentials/{role}`, each GET sending the token.
    func instanceMetadata(_ endpoint: String) async throws -> Credentials {
        let base = endpoint.hasSuffix("/") ? String(endpoint.dropLast()) : endpoint
        let tokenAnswer = try await send(
            "PUT", base + "/latest/api/token", headers: [("X-aws-ec2-metadata-token-ttl-seconds", "21600")],
            options: localOptions, what: "the instance metadata service")
        guard tokenAnswer.status == 200 else { throw Failure("the instance metadata service answered \(tokenAnswer.status) for a token") }
        let token = String(decoding: tokenAnswer.body, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        guard !token.isEmpty else { throw Failure("the instance metadata service answered an empty token") }
        let headers = [("X-aws-ec2-metadata-token", token)]
        let path = base + "/latest/meta-data/iam/security-credentials/"
        let roles = try await send("GET", path, headers: headers, options: localOptions, what: "the instance metadata service")
        guard roles.status == 200 else {
            throw Failure("the instance metadata service answered \(roles.status) for the role (is an instance profile attached?)")
        }
        let role = String(decoding: roles.body, as: UTF8.self).split(whereSeparator: \.isNewline).first.map(String.init) ?? ""
        let name = role.trimmingCharacters(in: .whitespaces)
        guard !name.isEmpty, name.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F && $0 != UInt8(ascii: "/") }) else {
            throw Failure("the instance metadata service named no usable role")
        }
        let answer = try await send(
            "GET", path + URIEncoding.encode(name), headers: headers, options: localOptions, what: "the instance metadata service")
        guard answer.status == 200 else {
            throw Failure("the instance metadata service answered \(answer.status) for the role's credentials")
        }
        return try CredentialsAnswer.json(answer.body, from: "the instance metadata service")
    }
}

import Foundation
import SigV4

/// The answers of the credential providers, read into `Credentials`. Errors say what was
/// missing or wrong, never a value from the answer (it holds secrets).
public enum CredentialsAnswer {
    /// A provider's answer that cannot be used.
    public struct Unusable: Error, Sendable, Equatable, CustomStringConvertible {
        public let description: String

        public init(_ description: String) {
            self.description = description
        }
    }

    /// STS `AssumeRoleWithWebIdentityResponse` XML (AWS STS API Reference,
    /// AssumeRoleWithWebIdentity): `AssumeRoleWithWebIdentityResult/Credentials/{AccessKeyId,
    /// SecretAccessKey, SessionToken, Expiration}`. An `ErrorResponse` answers its `Code`.
    public static func sts(_ body: [UInt8]) throws(Unusable) -> Credentials {
        guard let tree = try? XMLTree.parse(body) else { throw Unusable("STS answered unreadable XML") }
        if tree.name == "ErrorResponse" {
            let code = tree.child("Error")?.text("Code") ?? "unknown"
            throw Unusable("STS refused: \(Self.safeWord(code))")
        }
        guard tree.name == "AssumeRoleWithWebIdentityResponse",
            let credentials = tree.child("AssumeRoleWithWebIdentityResult")?.child("Credentials")
        else {
            throw Unusable("STS answered without AssumeRoleWithWebIdentityResult/Credentials")
        }
        return try make(
            key: credentials.text("AccessKeyId"), secret: credentials.text("SecretAccessKey"),
            token: credentials.text("SessionToken"), expiration: credentials.text("Expiration"), from: "STS")
    }

    /// The container endpoint's and the instance metadata service's JSON: `AccessKeyId`,
    /// `SecretAccessKey`, `Token`, `Expiration` (RFC 3339); IMDS adds `Code`, which must be
    /// `Success` when present.
    public static func json(_ body: [UInt8], from provider: String) throws(Unusable) -> Credentials {
        guard let object = (try? JSONSerialization.jsonObject(with: Data(body))) as? [String: Any] else {
            throw Unusable("\(provider) answered no JSON object")
        }
        if let code = object["Code"] as? String, code != "Success" {
            throw Unusable("\(provider) answered Code \(Self.safeWord(code))")
        }
        return try make(
            key: object["AccessKeyId"] as? String, secret: object["SecretAccessKey"] as? String,
            token: object["Token"] as? String, expiration: object["Expiration"] as? String, from: provider)
    }

    private static func make(
        key: String?, secret: String?, token: String?, expiration: String?, from provider: String
    ) throws(Unusable) -> Credentials {
        guard let key = key?.trimmed, !key.isEmpty else { throw Unusable("\(provider) answered no AccessKeyId") }
        guard let secret = secret?.trimmed, !secret.isEmpty else { throw Unusable("\(provider) answered no SecretAccessKey") }
        var end: Int?
        if let expiration = expiration?.trimmed, !expiration.isEmpty {
            guard let seconds = Self.seconds(rfc3339: expiration) else {
                throw Unusable("\(provider) answered an Expiration that is not an RFC 3339 time")
            }
            end = seconds
        }
        let token = token?.trimmed
        return Credentials(accessKeyID: key, secretAccessKey: secret, sessionToken: token?.isEmpty == false ? token : nil, expiration: end)
    }

    /// `2026-11-30T12:00:00Z`, with fractional seconds or an offset, as whole seconds since 1970.
    static func seconds(rfc3339 text: String) -> Int? {
        let plain = ISO8601DateFormatter()
        plain.formatOptions = [.withInternetDateTime]
        if let date = plain.date(from: text) { return Int(date.timeIntervalSince1970.rounded(.down)) }
        let fractional = ISO8601DateFormatter()
        fractional.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return fractional.date(from: text).map { Int($0.timeIntervalSince1970.rounded(.down)) }
    }

    /// An error code as the provider spelled it, if it looks like one (letters, digits, `.`):
    /// anything else is not repeated.
    static func safeWord(_ text: String) -> String {
        let word = text.trimmed
        guard !word.isEmpty, word.count <= 64, word.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == ".") }) else {
            return "(unreadable code)"
        }
        return word
    }
}

extension String {
    fileprivate var trimmed: String { trimmingCharacters(in: .whitespacesAndNewlines) }
}

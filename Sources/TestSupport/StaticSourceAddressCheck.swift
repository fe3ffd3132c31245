import Foundation
import Gateway

/// The `SourceAddressCheck` twin: hosts named at creation are refused as `rule`, every other
/// one is allowed. No look-up.
public struct StaticSourceAddressCheck: SourceAddressCheck {
    let refused: [String: String]

    /// `refused`: host → the rule it falls under ("a loopback address").
    public init(refused: [String: String]) {
        self.refused = refused
    }

    public func refusal(of sourceURL: String) async -> SourceAddressRefusal? {
        guard let components = URLComponents(string: sourceURL), let host = components.host,
            let rule = refused[host]
        else { return nil }
        return SourceAddressRefusal(
            host: host, port: components.port ?? (components.scheme == "https" ? 443 : 80),
            address: host, rule: rule)
    }
}

import Gateway

/// `/readyz`'s `fleet`: `config_mismatch` naming what differs when a live instance of the
/// deployment runs with other settings that must agree, another version or another schema.
/// Advisory: `/readyz` still answers 200, since during a rolling change every instance would
/// otherwise leave the balancer at once.
public struct FleetCheck: DependencyCheck {
    public let name = "fleet"
    public var isAdvisory: Bool { true }
    let fleet: any InstanceDirectory

    public init(fleet: any InstanceDirectory) {
        self.fleet = fleet
    }

    public func check(timeout: Int) async -> String? {
        guard let instances = try? await fleet.instances() else { return nil }
        let current = fleet.current
        var differing: [String: [String]] = [:]
        for other in instances where other.live && other.id != current.id {
            for name in current.disagreements(with: other) { differing[name, default: []].append(other.host) }
        }
        guard !differing.isEmpty else { return nil }
        let named = differing.sorted { $0.key < $1.key }.map { name, hosts in
            "\(name) (\(hosts.count) instance\(hosts.count == 1 ? "" : "s"))"
        }
        return "config_mismatch: differs from this instance: " + named.joined(separator: ", ")
    }
}

import HTTPServer

/// `GET /v1/admin/instances`: the deployment's instances as their heartbeats report them, for
/// identities with the admin role (403 `forbidden` for others). Each names its version, schema
/// version, the hash of the settings that must agree, when it started and last beat, whether it
/// is live, and `mismatch`: what differs from the instance that answers (empty when nothing).
struct AdminRoutes: Sendable {
    let context: RouteContext
    let instances: any InstanceDirectory

    func register(in router: inout Router<GatewayRoute>) {
        router.add("GET", "/v1/admin/instances") { try await list($0.http) }
    }

    private func list(_ http: HTTPRequest) async throws -> HTTPResponse {
        let identity = try context.authenticator.identity(of: http)
        guard identity.isAdmin else { throw APIError.forbidden }
        let current = instances.current
        var items: [UInt8] = [UInt8(ascii: "[")]
        for (index, instance) in try await instances.instances().enumerated() {
            if index > 0 { items.append(UInt8(ascii: ",")) }
            var text = JSONText()
            text.begin()
            text.field("id", .string(instance.id))
            text.field("host", .string(instance.host))
            text.field("version", .string(instance.version))
            text.field("schemaVersion", .int(instance.schemaVersion))
            text.field("settingsHash", .string(instance.settingsHash))
            text.field("startedAt", .string(Timestamp.rfc3339(milliseconds: Int64(instance.startedAt) * 1000)))
            text.field("heartbeatAt", .string(Timestamp.rfc3339(milliseconds: Int64(instance.heartbeatAt) * 1000)))
            text.field("live", .bool(instance.live))
            text.field("current", .bool(instance.id == current.id))
            var mismatch: [UInt8] = [UInt8(ascii: "[")]
            for (n, name) in current.disagreements(with: instance).enumerated() {
                if n > 0 { mismatch.append(UInt8(ascii: ",")) }
                var quoted = JSONText()
                quoted.appendString(name)
                mismatch.append(contentsOf: quoted.bytes)
            }
            mismatch.append(UInt8(ascii: "]"))
            text.rawField("mismatch", mismatch)
            text.end()
            items.append(contentsOf: text.bytes)
        }
        items.append(UInt8(ascii: "]"))
        var body = JSONText()
        body.begin()
        body.rawField("instances", items)
        body.end()
        return Responses.json(200, bytes: body.bytes)
    }
}

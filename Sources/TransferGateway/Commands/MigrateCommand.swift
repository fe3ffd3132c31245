import Foundation
import Gateway

/// `transfer-gateway migrate`: applies the schema migrations that are missing, then exits.
enum MigrateCommand {
    static func run() async {
        let configuration = Command.configuration()
        guard let url = configuration.databaseURL else { Command.fail("GATEWAY_DATABASE_URL: is required", code: 2) }
        do {
            let applied = try await GatewayApp.migrate(databaseURL: url)
            print(applied.isEmpty ? "schema is up to date" : "applied migrations \(applied.map(String.init).joined(separator: ", "))")
        } catch {
            Command.fail("migration failed: \(error)", code: 1)
        }
    }
}

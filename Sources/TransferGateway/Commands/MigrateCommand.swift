import Foundation
import Gateway

/// `transfer-gateway migrate`: applies the schema migrations that are missing, makes the
/// deployment's link secret if there is none yet (kept in PostgreSQL, never printed), then exits.
enum MigrateCommand {
    static func run() async {
        let configuration = Command.configuration()
        guard let url = configuration.databaseURL else { Command.fail("GATEWAY_DATABASE_URL: is required", code: 2) }
        do {
            let (applied, _) = try await GatewayApp.prepareDatabase(databaseURL: url)
            print(applied.isEmpty ? "schema is up to date" : "applied migrations \(applied.map(String.init).joined(separator: ", "))")
            if configuration.linkSecret == nil { print("link secret: kept in PostgreSQL, shared by every instance") }
        } catch let error as GatewayApp.SchemaTooNew {
            Command.fail("\(error)", code: 1)
        } catch {
            Command.fail("migration failed: \(error)", code: 1)
        }
    }
}

import Postgres
import S3

/// PostgreSQL answers `SELECT 1`.
struct PostgresCheck: DependencyCheck {
    let probe: PostgresProbe
    var name: String { "postgres" }

    func check(timeout: Int) async -> String? {
        switch await probe.check(timeout: timeout) {
        case .success: return nil
        case .failure(let error): return error.sqlState.map { "query failed (\($0))" } ?? "unreachable"
        }
    }
}

/// The bucket answers a signed HeadBucket with 200.
struct S3Check: DependencyCheck {
    let client: S3Client
    var name: String { "s3" }

    func check(timeout: Int) async -> String? {
        do {
            let status = try await client.headBucket(timeout: Double(timeout))
            return status == 200 ? nil : "HeadBucket answered \(status)"
        } catch {
            return "unreachable"
        }
    }
}

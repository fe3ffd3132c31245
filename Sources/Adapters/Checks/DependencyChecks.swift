import Gateway
import Postgres
import S3

/// PostgreSQL answers `SELECT 1`.
public struct PostgresCheck: DependencyCheck {
    let probe: PostgresProbe
    public var name: String { "postgres" }

    public init(probe: PostgresProbe) {
        self.probe = probe
    }

    public func check(timeout: Int) async -> String? {
        switch await probe.check(timeout: timeout) {
        case .success: return nil
        case .failure(let error): return error.sqlState.map { "query failed (\($0))" } ?? "unreachable"
        }
    }
}

/// The bucket answers a signed HeadBucket with 200.
public struct S3Check: DependencyCheck {
    let client: S3Client
    public var name: String { "s3" }

    public init(client: S3Client) {
        self.client = client
    }

    public func check(timeout: Int) async -> String? {
        do {
            let status = try await client.headBucket(timeout: Double(timeout))
            return status == 200 ? nil : "HeadBucket answered \(status)"
        } catch {
            return "unreachable"
        }
    }
}

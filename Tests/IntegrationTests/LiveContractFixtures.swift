import Foundation
import PortContracts
import Postgres
import Testing

@testable import Adapters
@testable import S3
@testable import TransferGateway

/// The fixtures the ports' contracts (PortContracts) run on live: the real adapters on PostgreSQL
/// and SeaweedFS, where the unit tests run the same cases on the in-memory twins. A case that
/// passes on one side only is a twin that drifted (or an adapter to look at).
enum LiveContractFixtures {
    /// The PostgreSQL stores on the live database, under a tag of the fixture's own. `retiring`:
    /// every other active job is canceled first (a claim takes the oldest runnable job of the
    /// whole table), for the job store's suite, which runs inside `JobTableTests`.
    static func stores(retiring: Bool) async throws -> StoreFixture {
        let url = try #require(try Configuration.fromEnvironment(liveEnvironment).databaseURL)
        _ = try await GatewayApp.migrate(databaseURL: url)
        let pool = PostgresPool(url: url, size: 2)
        if retiring { try await JobTableTests.retireLeftovers(pool) }
        let tag = String(UUID().uuidString.prefix(8)).lowercased()
        let owners = "%-" + tag
        return StoreFixture(
            jobs: PostgresJobStore(pool: pool), clientUploads: PostgresClientUploadStore(pool: pool),
            idempotency: PostgresIdempotencyStore(pool: pool), tag: tag,
            age: { milliseconds in
                // Time passes for the fixture's rows: each of their moments moves that far back.
                try await pool.withTransaction { connection in
                    let by = Int64(milliseconds)
                    try connection.query(
                        """
                        UPDATE jobs SET created_at = created_at - \(by) * interval '1 millisecond',
                               updated_at = updated_at - \(by) * interval '1 millisecond',
                               completed_at = completed_at - \(by) * interval '1 millisecond',
                               lease_expires_at = lease_expires_at - \(by) * interval '1 millisecond',
                               bytes_at = bytes_at - \(by) * interval '1 millisecond',
                               retry_at = retry_at - \(by) * interval '1 millisecond'
                        WHERE owner LIKE \(owners)
                        """)
                    try connection.query(
                        """
                        UPDATE uploads SET created_at = created_at - \(by) * interval '1 millisecond',
                               touched_at = touched_at - \(by) * interval '1 millisecond',
                               completed_at = completed_at - \(by) * interval '1 millisecond'
                        WHERE owner LIKE \(owners)
                        """)
                    try connection.query(
                        """
                        UPDATE idempotency_keys SET created_at = created_at - \(by) * interval '1 millisecond' WHERE owner LIKE \(owners)
                        """)
                }
            },
            now: {
                try await pool.withConnection { connection in
                    let row = try #require(try connection.query("SELECT extract(epoch FROM clock_timestamp())::float8::text AS now").first)
                    return try #require(Double(try row.string("now")))
                }
            },
            tearDown: {
                _ = try? await pool.withTransaction { connection in
                    try connection.query("DELETE FROM jobs WHERE owner LIKE \(owners)")
                    try connection.query("DELETE FROM uploads WHERE owner LIKE \(owners)")
                    try connection.query("DELETE FROM object_checksums WHERE object_key LIKE \("contracts/" + tag + "/%")")
                    try connection.query("DELETE FROM idempotency_keys WHERE owner LIKE \(owners)")
                }
            },
            checksums: PostgresObjectChecksums(pool: pool))
    }

    /// `PostgresEventFeed` on the live database: jobs inserted by `PostgresJobStore`, whose
    /// trigger records each, under owners of the fixture's own. The jobs are completed downloads:
    /// no worker claims them and no other suite's clean-up changes them.
    static func eventFeed() async throws -> EventFeedFixture {
        let url = try #require(try Configuration.fromEnvironment(liveEnvironment).databaseURL)
        _ = try await GatewayApp.migrate(databaseURL: url)
        let pool = PostgresPool(url: url, size: 2)
        let jobs = PostgresJobStore(pool: pool)
        let tag = String(UUID().uuidString.prefix(8)).lowercased()
        let owners = "%-" + tag
        return EventFeedFixture(
            feed: PostgresEventFeed(pool: pool), tag: tag,
            create: { job in _ = try await jobs.insert(job, quota: nil) },
            age: { milliseconds in
                _ = try await pool.withConnection { connection in
                    try connection.query(
                        """
                        UPDATE feed_events SET created_at = created_at - \(Int64(milliseconds)) * interval '1 millisecond'
                        WHERE owner LIKE \(owners)
                        """)
                }
            },
            tearDown: {
                _ = try? await pool.withTransaction { connection in
                    try connection.query("DELETE FROM jobs WHERE owner LIKE \(owners)")
                    try connection.query("DELETE FROM feed_events WHERE owner LIKE \(owners)")
                    try connection.query("DELETE FROM feed_sequences WHERE owner LIKE \(owners)")
                }
            })
    }

    /// The S3 adapter on the live bucket, under `tests/port-contracts/<uuid>/`.
    static func objects() throws -> ObjectStoreFixture {
        let client = try liveClient()
        let prefix = "tests/port-contracts/\(UUID().uuidString.lowercased())/"
        return ObjectStoreFixture(
            store: S3ObjectStore(client: client), prefix: prefix,
            tearDown: {
                for object in (try? await client.listObjects(prefix: prefix)) ?? [] { try? await client.deleteObject(key: object.key) }
                for upload in (try? await client.listMultipartUploads(prefix: prefix)) ?? [] {
                    try? await client.abortIfOpen(key: upload.key, uploadId: upload.uploadId)
                }
            })
    }
}

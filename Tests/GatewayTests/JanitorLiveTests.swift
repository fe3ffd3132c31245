import Foundation
import Postgres
import S3
import SigV4
import Testing
@testable import Gateway
import TransferEngine

extension JobTableTests {
@Suite struct JanitorLiveTests {
    @Test func idleUploadsAreAbortedAndJobsUploadsKept() async throws {
        let c = try Configuration.fromEnvironment(liveEnvironment)
        let client = try c.makeS3Client()
        let pool = try PostgresPoolFor.live()
        _ = try await GatewayApp.migrate(databaseURL: c.databaseURL ?? "")
        let prefix = "private/janitor-\(UUID().uuidString)/"
        let idle = try await client.createMultipartUpload(key: prefix + "idle.bin")
        let owned = try await client.createMultipartUpload(key: prefix + "owned.bin")
        let jobID = UUID().uuidString.lowercased()
        try await pool.withConnection { connection in
            try connection.query("""
                INSERT INTO jobs (id, owner, type, state, object_key, part_size, upload_id)
                VALUES (\(jobID)::uuid, 'alice', 'copy', 'paused', \(prefix + "owned.bin"), 5242880, \(owned))
                """)
        }
        let janitor = Janitor(client: client, pool: pool, ttlSeconds: 3600)
        // Younger than the TTL: kept.
        #expect(try await janitor.sweep(prefixes: [prefix]).isEmpty)
        // Two hours later: the idle one goes, the paused job's stays.
        let aborted = try await janitor.sweep(prefixes: [prefix], now: Date().addingTimeInterval(7200))
        #expect(aborted == [idle])
        #expect(try await client.listMultipartUploads(prefix: prefix).map(\.uploadId) == [owned])
        try await client.abortMultipartUpload(key: prefix + "owned.bin", uploadId: owned)
        try await pool.withConnection { try $0.query("DELETE FROM jobs WHERE id = \(jobID)::uuid") }
    }

    @Test func expiredSpoolFilesGoUnlessTheirJobRuns() async throws {
        let c = try Configuration.fromEnvironment(liveEnvironment)
        let pool = try PostgresPoolFor.live()
        _ = try await GatewayApp.migrate(databaseURL: c.databaseURL ?? "")
        let spool = try DirectorySpool(directory: NSTemporaryDirectory() + "janitor-spool-" + UUID().uuidString)
        let done = UUID().uuidString.lowercased(), running = UUID().uuidString.lowercased()
        try await pool.withConnection { connection in
            try connection.query("""
                INSERT INTO jobs (id, owner, type, state, object_key, part_size)
                VALUES (\(done)::uuid, 'alice', 'download', 'completed', 'private/alice/a', 5242880),
                       (\(running)::uuid, 'alice', 'download', 'running', 'private/alice/b', 5242880)
                """)
        }
        for id in [done, running] { _ = try spool.open(jobID: id, name: .download, create: true, truncate: true) }
        let janitor = Janitor(client: try c.makeS3Client(), pool: pool, ttlSeconds: 3600, spool: spool, downloadTTLSeconds: 600)
        #expect(try await janitor.sweepSpool().isEmpty, "fresh files are kept")
        let removed = try await janitor.sweepSpool(now: Date().addingTimeInterval(601))
        #expect(removed == ["\(done).data"])
        #expect(!FileManager.default.fileExists(atPath: spool.path(jobID: done, name: .download)))
        #expect(FileManager.default.fileExists(atPath: spool.path(jobID: running, name: .download)), "a running job's spool stays")
        try await pool.withConnection { try $0.query("DELETE FROM jobs WHERE id IN (\(done)::uuid, \(running)::uuid)") }
    }

    @Test func initiatedTimesParse() {
        #expect(RFC3339.date(from: "2026-11-30T00:11:56Z") != nil)
        #expect(RFC3339.date(from: "2026-11-30T00:11:56.123Z") != nil)
        #expect(RFC3339.date(from: "yesterday") == nil)
    }
}
}

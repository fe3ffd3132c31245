import Foundation
import Postgres
import S3
import SigV4
import Testing
import TransferEngine

@testable import Adapters
@testable import Gateway
@testable import TransferGateway

extension JobTableTests {
    @Suite struct JanitorLiveTests {
        /// The bucket is shared: an upload this deployment never recorded is not the janitor's to
        /// abort, however old; a recorded client-driven upload idle past the TTL is, and a paused
        /// job's upload is kept.
        @Test func onlyRecordedIdleUploadsAreAborted() async throws {
            let c = try Configuration.fromEnvironment(liveEnvironment)
            let client = try c.makeS3Client()
            let pool = try PostgresPoolFor.live()
            _ = try await GatewayApp.migrate(databaseURL: c.databaseURL ?? "")
            let prefix = "private/janitor-\(UUID().uuidString)/"
            let unknown = try await client.createMultipartUpload(key: prefix + "unknown.bin")
            let recorded = try await client.createMultipartUpload(key: prefix + "recorded.bin")
            let owned = try await client.createMultipartUpload(key: prefix + "owned.bin")
            let jobID = UUID().uuidString.lowercased(), uploadID = UUID().uuidString.lowercased()
            try await pool.withConnection { connection in
                try connection.query(
                    """
                    INSERT INTO jobs (id, owner, type, state, object_key, part_size, upload_id)
                    VALUES (\(jobID)::uuid, 'alice', 'copy', 'paused', \(prefix + "owned.bin"), 5242880, \(owned))
                    """)
                try connection.query(
                    """
                    INSERT INTO uploads (id, owner, object_key, s3_upload_id, size, part_size, part_count, state)
                    VALUES (\(uploadID)::uuid, 'alice', \(prefix + "recorded.bin"), \(recorded), 10, 5242880, 1, 'open')
                    """)
            }
            let janitor = Janitor(client: client, pool: pool, ttlSeconds: 3600)
            // Younger than the TTL: kept.
            #expect(try await janitor.sweep(prefixes: [prefix]).isEmpty)
            // Two hours later: the recorded idle one goes; the unknown one and the paused job's stay.
            let aborted = try await janitor.sweep(prefixes: [prefix], now: Date().addingTimeInterval(7200))
            #expect(aborted == [recorded])
            #expect(Set(try await client.listMultipartUploads(prefix: prefix).map(\.uploadId)) == [unknown, owned])
            for (key, id) in [("owned.bin", owned), ("unknown.bin", unknown)] {
                try await client.abortMultipartUpload(key: prefix + key, uploadId: id)
            }
            try await pool.withConnection { try $0.query("DELETE FROM jobs WHERE id = \(jobID)::uuid") }
        }

        /// A job failed in a way a retry could get past keeps its multipart upload for the TTL
        /// after its failure; then the janitor aborts it and the job is no longer retryable.
        @Test func anUploadKeptForARetryGoesAfterTheTTL() async throws {
            let c = try Configuration.fromEnvironment(liveEnvironment)
            let client = try c.makeS3Client()
            let pool = try PostgresPoolFor.live()
            _ = try await GatewayApp.migrate(databaseURL: c.databaseURL ?? "")
            let key = "private/janitor-\(UUID().uuidString)/kept.bin"
            let kept = try await client.createMultipartUpload(key: key)
            let jobID = UUID().uuidString.lowercased()
            try await pool.withConnection { connection in
                try connection.query(
                    """
                    INSERT INTO jobs (id, owner, type, state, object_key, source, part_size, upload_id, error, completed_at)
                    VALUES (\(jobID)::uuid, 'alice', 'copy', 'failed', \(key), '{"key": "private/janitor-source"}'::jsonb, 5242880, \(kept),
                            '{"code": "stalled", "retryable": true}'::jsonb, now())
                    """)
            }
            let store = PostgresJobStore(pool: pool)
            #expect(try await store.uploadIDsInUse(key: key) == [kept])
            let janitor = Janitor(client: client, pool: pool, ttlSeconds: 3600)
            #expect(!(try await janitor.sweep(prefixes: ["private/janitor-"])).contains(kept))
            #expect(try await client.listMultipartUploads(prefix: key).map(\.uploadId) == [kept])
            let aborted = try await janitor.sweep(prefixes: ["private/janitor-"], now: Date().addingTimeInterval(7200))
            #expect(aborted.contains(kept))
            #expect(try await client.listMultipartUploads(prefix: key).isEmpty)
            let after = try #require(try await store.job(id: jobID))
            #expect(after.uploadID == nil && after.error == JobFailure(.stalled) && after.error?.retryable == false)
            #expect(try await store.retry(id: jobID, failedSince: 0, quota: nil)?.state == .failed)
            try await pool.withConnection { try $0.query("DELETE FROM jobs WHERE id = \(jobID)::uuid") }
        }

        /// The bucket is shared: a staged tail piece of a job this database does not know belongs
        /// to another deployment and stays; one of a job that ended here goes.
        @Test func stagedPiecesOfJobsThisDatabaseDoesNotKnowStay() async throws {
            let c = try Configuration.fromEnvironment(liveEnvironment)
            let client = try c.makeS3Client()
            let pool = try PostgresPoolFor.live()
            _ = try await GatewayApp.migrate(databaseURL: c.databaseURL ?? "")
            let foreign = UUID().uuidString.lowercased(), ended = UUID().uuidString.lowercased()
            let foreignKey = EngineSettingsPrefix.staging + "\(foreign)/0-aa", endedKey = EngineSettingsPrefix.staging + "\(ended)/0-bb"
            for key in [foreignKey, endedKey] { _ = try await client.putObject(key: key, body: .bytes(Array("tail".utf8))) }
            try await pool.withConnection { connection in
                try connection.query(
                    """
                    INSERT INTO jobs (id, owner, type, state, object_key, part_size)
                    VALUES (\(ended)::uuid, 'alice', 'upload', 'completed', 'private/alice/x', 5242880)
                    """)
            }
            let removed = try await Janitor(client: client, pool: pool, ttlSeconds: 3600).sweepStaging()
            #expect(removed.contains(endedKey))
            #expect(!removed.contains(foreignKey), "another deployment's staged tail was deleted")
            #expect(try await client.listObjects(prefix: EngineSettingsPrefix.staging + foreign).count == 1)
            _ = try? await client.deleteObject(key: foreignKey)
            try await pool.withConnection { try $0.query("DELETE FROM jobs WHERE id = \(ended)::uuid") }
        }

        /// A client-driven upload whose creation died half way (recorded `creating`, S3 asked, its
        /// id never recorded) is resolved: the S3 upload of exactly its key, begun with it, goes.
        @Test func aHalfCreatedUploadIsResolved() async throws {
            let c = try Configuration.fromEnvironment(liveEnvironment)
            let client = try c.makeS3Client()
            let pool = try PostgresPoolFor.live()
            let prefix = "private/janitor-\(UUID().uuidString)/"
            let orphan = try await client.createMultipartUpload(key: prefix + "half.bin")
            let other = try await client.createMultipartUpload(key: prefix + "half.bin.other")
            let uploadID = UUID().uuidString.lowercased()
            try await pool.withConnection { connection in
                try connection.query(
                    """
                    INSERT INTO uploads (id, owner, object_key, s3_upload_id, size, part_size, part_count, state)
                    VALUES (\(uploadID)::uuid, 'alice', \(prefix + "half.bin"), NULL, 10, 5242880, 1, 'creating')
                    """)
            }
            let janitor = Janitor(client: client, pool: pool, ttlSeconds: 3600)
            let aborted = try await janitor.sweep(prefixes: [prefix], now: Date().addingTimeInterval(7200))
            #expect(aborted == [orphan])
            #expect(try await client.listMultipartUploads(prefix: prefix).map(\.uploadId) == [other])
            let state = try await pool.withConnection {
                try $0.query("SELECT state FROM uploads WHERE id = \(uploadID)::uuid").first?.string("state")
            }
            #expect(state == "aborted")
            try await client.abortMultipartUpload(key: prefix + "half.bin.other", uploadId: other)
        }

        @Test func expiredSpoolFilesGoUnlessTheirJobRuns() async throws {
            let c = try Configuration.fromEnvironment(liveEnvironment)
            let pool = try PostgresPoolFor.live()
            _ = try await GatewayApp.migrate(databaseURL: c.databaseURL ?? "")
            let spool = try DirectorySpool(directory: NSTemporaryDirectory() + "janitor-spool-" + UUID().uuidString)
            let done = UUID().uuidString.lowercased(), running = UUID().uuidString.lowercased()
            try await pool.withConnection { connection in
                try connection.query(
                    """
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

import Foundation
import Postgres
import S3
import TransferEngine

/// Aborts multipart uploads under the gateway's prefixes that are older than
/// `GATEWAY_UPLOAD_TTL` and that no unfinished job owns, so nothing abandoned stays billed.
/// Client-driven uploads (`/v1/uploads`) follow the same rule: one still open past the TTL is
/// marked aborted and its S3 upload aborted with it, so its record never claims an upload S3
/// no longer has; so do upload jobs still waiting for their bytes past the TTL (what tus
/// advertises as `Upload-Expires`): they fail with `upload_expired` and their S3 upload goes;
/// removes spool files untouched for `GATEWAY_DOWNLOAD_TTL` (prepared downloads) whose job is
/// not running.
public struct Janitor: Sendable {
    let client: S3Client
    let pool: PostgresPool
    let ttlSeconds: Int
    let spool: DirectorySpool?
    let downloadTTLSeconds: Int

    public init(client: S3Client, pool: PostgresPool, ttlSeconds: Int, spool: DirectorySpool? = nil, downloadTTLSeconds: Int = 3600) {
        self.client = client
        self.pool = pool
        self.ttlSeconds = ttlSeconds
        self.spool = spool
        self.downloadTTLSeconds = downloadTTLSeconds
    }

    /// Removes spool files last written more than the download TTL ago, unless their job is
    /// still running (a slow download being prepared). Returns the files removed.
    @discardableResult
    public func sweepSpool(now: Date = Date()) async throws -> [String] {
        guard let spool else { return [] }
        let names = (try? FileManager.default.contentsOfDirectory(atPath: spool.directory)) ?? []
        let running = Set(try await pool.withConnection { connection in
            try connection.query("SELECT id::text AS id FROM jobs WHERE state IN ('queued', 'running')").map { try $0.string("id") }
        })
        var removed: [String] = []
        for name in names {
            let path = spool.directory + "/" + name
            guard let jobID = name.split(separator: ".").first.map(String.init), !running.contains(jobID),
                  let attributes = try? FileManager.default.attributesOfItem(atPath: path),
                  let modified = attributes[.modificationDate] as? Date,
                  now.timeIntervalSince(modified) >= Double(downloadTTLSeconds) else { continue }
            if unlink(path) == 0 { removed.append(name) }
        }
        return removed
    }

    /// One pass; returns the uploads aborted.
    @discardableResult
    public func sweep(prefixes: [String] = ["public/", "protected/", "private/"], now: Date = Date()) async throws -> [String] {
        // The records first, so no client completes an upload whose S3 upload is going:
        // client-driven uploads still open, and upload jobs still waiting for bytes (tus answers
        // those 410 from then on).
        let cutoff = now.timeIntervalSince1970 - Double(ttlSeconds)
        let expired = try await pool.withConnection { connection in
            try prefixes.flatMap { prefix in
                try connection.query("""
                    UPDATE uploads SET state = 'aborted', completed_at = now()
                    WHERE state = 'open' AND starts_with(object_key, \(prefix)) AND created_at <= to_timestamp(\(cutoff))
                    RETURNING object_key, s3_upload_id AS upload_id
                    """)
                + connection.query("""
                    UPDATE jobs SET state = 'failed', error = '{"code":"upload_expired"}'::jsonb, version = version + 1,
                                    updated_at = now(), completed_at = now()
                    WHERE type = 'upload' AND state = 'pending' AND starts_with(object_key, \(prefix))
                      AND created_at <= to_timestamp(\(cutoff))
                    RETURNING object_key, upload_id
                    """)
            }.compactMap { row in try row.optionalString("upload_id").map { (key: try row.string("object_key"), id: $0) } }
        }
        var aborted: [String] = []
        for upload in expired {
            try await client.abortIfOpen(key: upload.key, uploadId: upload.id)
            aborted.append(upload.id)
        }
        let owned = Set(try await pool.withConnection { connection in
            try connection.query("SELECT upload_id FROM jobs WHERE upload_id IS NOT NULL AND state IN ('pending', 'queued', 'running', 'paused')")
                .map { try $0.string("upload_id") }
        })
        for prefix in prefixes {
            for upload in try await client.listMultipartUploads(prefix: prefix)
            where !owned.contains(upload.uploadId) && !aborted.contains(upload.uploadId) {
                guard let initiated = RFC3339.date(from: upload.initiated), now.timeIntervalSince(initiated) >= Double(ttlSeconds) else { continue }
                try await client.abortMultipartUpload(key: upload.key, uploadId: upload.uploadId)
                aborted.append(upload.uploadId)
            }
        }
        return aborted
    }

    /// Runs `sweep` every `interval` seconds until the task is cancelled.
    public func run(every interval: Double, logger: Logger) async {
        while !Task.isCancelled {
            do {
                let aborted = try await sweep()
                if !aborted.isEmpty { logger.info("janitor aborted idle uploads", ["count": .int(aborted.count)]) }
                let removed = try await sweepSpool()
                if !removed.isEmpty { logger.info("janitor removed expired spool files", ["count": .int(removed.count)]) }
            } catch {
                logger.warn("janitor pass failed", ["error": .string(String(describing: type(of: error)))])
            }
            try? await Task.sleep(for: .milliseconds(Int(interval * 1000)))
        }
    }
}

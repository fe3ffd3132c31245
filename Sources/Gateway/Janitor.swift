import Foundation
import Postgres
import S3
import TransferEngine

/// Ends what was abandoned, touching only what this deployment recorded (the bucket may hold
/// other people's multipart uploads: they are not ours to abort):
/// - upload jobs and tus uploads idle past `GATEWAY_UPLOAD_TTL` since their last byte, whoever
///   held them (waiting, paused, or cut by a crash): failed `upload_expired`, their S3 upload
///   aborted and their staged tail removed;
/// - client-driven uploads (`/v1/uploads`) idle that long (no part URL asked for, no part
///   landed): marked aborted and their S3 upload aborted, so the record never claims an upload S3
///   no longer has; a record whose creation died half way is resolved from the uploads S3 lists
///   for exactly its key around its creation time;
/// - staged tail pieces whose job ended or no longer lists them;
/// - spool files untouched for `GATEWAY_DOWNLOAD_TTL` whose job is not running here.
public struct Janitor: Sendable {
    let client: S3Client
    let pool: PostgresPool
    let ttlSeconds: Int
    let spool: DirectorySpool?
    let downloadTTLSeconds: Int
    let stagingPrefix: String

    public init(client: S3Client, pool: PostgresPool, ttlSeconds: Int, spool: DirectorySpool? = nil, downloadTTLSeconds: Int = 3600,
                stagingPrefix: String = EngineSettings().stagingPrefix) {
        self.client = client
        self.pool = pool
        self.ttlSeconds = ttlSeconds
        self.spool = spool
        self.downloadTTLSeconds = downloadTTLSeconds
        self.stagingPrefix = stagingPrefix
    }

    /// Removes spool files last written more than the download TTL ago, unless their job is
    /// still queued or running. Returns the files removed.
    @discardableResult
    public func sweepSpool(now: Date = Date()) async throws -> [String] {
        guard let spool else { return [] }
        let names = DirectorySpool.names(in: spool.directory)
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
            if spool.remove(fileNamed: name) { removed.append(name) }
        }
        return removed
    }

    /// One pass over recorded uploads under `prefixes`; returns the S3 upload ids aborted.
    @discardableResult
    public func sweep(prefixes: [String] = ["public/", "protected/", "private/"], now: Date = Date()) async throws -> [String] {
        let cutoff = now.timeIntervalSince1970 - Double(ttlSeconds)
        var aborted: [String] = []
        // The records first, so no client completes an upload whose S3 upload is going.
        let expiredJobs = try await pool.withConnection { connection in
            try prefixes.flatMap { prefix in
                try connection.query("""
                    UPDATE jobs SET state = 'failed', error = '{"code":"upload_expired"}'::jsonb, lease_owner = NULL,
                           lease_expires_at = NULL, version = version + 1, updated_at = now(), completed_at = now()
                    WHERE type = 'upload' AND starts_with(object_key, \(prefix))
                      AND (state IN ('pending', 'paused') OR (state = 'running' AND lease_expires_at < now()))
                      AND coalesce(bytes_at, created_at) <= to_timestamp(\(cutoff))
                    RETURNING object_key, upload_id, upload_tail_segments::text AS tail
                    """)
            }
        }
        for row in expiredJobs {
            let key = try row.string("object_key")
            if let uploadID = try row.optionalString("upload_id") {
                try await client.abortIfOpen(key: key, uploadId: uploadID)
                aborted.append(uploadID)
            }
            for segment in (try? JSONDecoder().decode([TailSegment].self, from: Data(row.string("tail").utf8))) ?? [] {
                try? await client.deleteObject(key: segment.key)
            }
        }
        aborted += try await sweepClientUploads(prefixes: prefixes, cutoff: cutoff, now: now)
        return aborted
    }

    /// Client-driven uploads idle past the TTL: no part URL asked for since, and no part S3
    /// received since (the bytes go straight to S3, so S3's record of the last part counts).
    private func sweepClientUploads(prefixes: [String], cutoff: Double, now: Date) async throws -> [String] {
        let candidates = try await pool.withConnection { connection in
            try prefixes.flatMap { prefix in
                try connection.query("""
                    SELECT id::text AS id, object_key, s3_upload_id, state,
                           extract(epoch FROM created_at)::float8 AS created
                    FROM uploads
                    WHERE state IN ('open', 'creating') AND starts_with(object_key, \(prefix))
                      AND greatest(created_at, coalesce(touched_at, created_at)) <= to_timestamp(\(cutoff))
                    """)
            }
        }
        var aborted: [String] = []
        for row in candidates {
            let id = try row.string("id"), key = try row.string("object_key")
            if try row.string("state") == "creating" {
                aborted += try await resolveHalfCreated(id: id, key: key, createdAt: Double(try row.string("created")) ?? 0)
                continue
            }
            guard let uploadID = try row.optionalString("s3_upload_id") else { continue }
            let parts = (try? await client.listParts(key: key, uploadId: uploadID)) ?? []
            let lastPart = parts.compactMap { $0.lastModified.flatMap(RFC3339.date(from:)) }.max()
            if let lastPart, lastPart.timeIntervalSince1970 > cutoff { continue }
            let marked = try await pool.withConnection { connection in
                try connection.query("""
                    UPDATE uploads SET state = 'aborted', completed_at = now() WHERE id = \(id)::uuid AND state = 'open'
                    RETURNING 1 AS ok
                    """)
            }
            guard !marked.isEmpty else { continue }
            try await client.abortIfOpen(key: key, uploadId: uploadID)
            aborted.append(uploadID)
        }
        return aborted
    }

    /// A record left `creating` (the gateway died between recording it and hearing S3's upload
    /// id): the uploads S3 lists for exactly its key, begun within a minute of it and owned by
    /// nothing else, are its, and are aborted.
    private func resolveHalfCreated(id: String, key: String, createdAt: Double) async throws -> [String] {
        let inUse = try await PostgresJobStore(pool: pool).uploadIDsInUse(key: key)
        var aborted: [String] = []
        for upload in try await client.listMultipartUploads(prefix: key) where upload.key == key && !inUse.contains(upload.uploadId) {
            guard let initiated = RFC3339.date(from: upload.initiated),
                  abs(initiated.timeIntervalSince1970 - createdAt) <= 60 else { continue }
            try await client.abortIfOpen(key: key, uploadId: upload.uploadId)
            aborted.append(upload.uploadId)
        }
        try await pool.withConnection { connection in
            try connection.query("UPDATE uploads SET state = 'aborted', completed_at = now() WHERE id = \(id)::uuid")
        }
        return aborted
    }

    /// Staged tail pieces whose job has ended (or is gone), or that their job no longer lists
    /// and that are older than `graceSeconds` (a piece is written before its job lists it).
    /// Returns the keys removed.
    @discardableResult
    public func sweepStaging(now: Date = Date(), graceSeconds: Double = 3600) async throws -> [String] {
        let staged = try await client.listObjects(prefix: stagingPrefix)
        guard !staged.isEmpty else { return [] }
        var byJob: [String: [ObjectListing]] = [:]
        for object in staged {
            let rest = object.key.dropFirst(stagingPrefix.count)
            guard let job = rest.split(separator: "/").first, UUID(uuidString: String(job)) != nil else { continue }
            byJob[String(job).lowercased(), default: []].append(object)
        }
        let ids = "{" + byJob.keys.sorted().joined(separator: ",") + "}"
        let listed = try await pool.withConnection { connection in
            try connection.query("""
                SELECT id::text AS id, state, upload_tail_segments::text AS tail FROM jobs WHERE id = ANY(\(ids)::uuid[])
                """)
        }
        var live: [String: Set<String>] = [:]
        for row in listed where !(Job.State(rawValue: try row.string("state"))?.isFinal ?? true) {
            let segments = (try? JSONDecoder().decode([TailSegment].self, from: Data(row.string("tail").utf8))) ?? []
            live[try row.string("id")] = Set(segments.map(\.key))
        }
        var removed: [String] = []
        for (job, objects) in byJob {
            for object in objects {
                if let keys = live[job] {
                    let age = RFC3339.date(from: object.lastModified).map { now.timeIntervalSince($0) } ?? 0
                    if keys.contains(object.key) || age < graceSeconds { continue }
                }
                try? await client.deleteObject(key: object.key)
                removed.append(object.key)
            }
        }
        return removed
    }

    /// Runs every sweep every `interval` seconds until the task is cancelled.
    public func run(every interval: Double, logger: Logger) async {
        while !Task.isCancelled {
            do {
                let aborted = try await sweep()
                if !aborted.isEmpty { logger.info("janitor aborted idle uploads", ["count": .int(aborted.count)]) }
                let staged = try await sweepStaging()
                if !staged.isEmpty { logger.info("janitor removed staged tails", ["count": .int(staged.count)]) }
                let removed = try await sweepSpool()
                if !removed.isEmpty { logger.info("janitor removed expired spool files", ["count": .int(removed.count)]) }
            } catch {
                logger.warn("janitor pass failed", ["error": .string(String(describing: type(of: error)))])
            }
            try? await Task.sleep(for: .milliseconds(Int(interval * 1000)))
        }
    }
}

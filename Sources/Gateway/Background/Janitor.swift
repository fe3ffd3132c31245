import Foundation
import TransferEngine

/// Ends what was abandoned, touching only what this deployment recorded (the bucket may hold
/// other people's multipart uploads: they are not ours to abort):
/// - upload jobs and tus uploads idle past `GATEWAY_UPLOAD_TTL` since their last byte, whoever
///   held them (waiting, paused, or cut by a crash): failed `upload_expired`, their S3 upload
///   aborted and their staged tail removed;
/// - multipart uploads kept for the retry of a job that failed in a way waiting could pass,
///   that long after the failure: aborted, and the job no longer retryable;
/// - client-driven uploads (`/v1/uploads`) idle that long (no part URL asked for, no part
///   landed): marked aborted and their S3 upload aborted, so the record never claims an upload S3
///   no longer has; a record whose creation died half way is resolved from the uploads S3 lists
///   for exactly its key around its creation time;
/// - staged tail pieces whose job ended or no longer lists them;
/// - spool files untouched for `GATEWAY_DOWNLOAD_TTL` whose job is not running;
/// - event feed entries older than 24 hours (`GET /v1/events` keeps a day).
public struct Janitor: Sendable {
    let jobs: any MaintenanceStore
    let clientUploads: any ClientUploadStore
    /// For the uploads a half-created record may own: those in use by a job or record are not.
    let jobStore: any JobStore
    let bucket: any BucketMaintenance
    let ttlSeconds: Int
    let spool: (any SpoolMaintenance)?
    let downloadTTLSeconds: Int
    let stagingPrefix: String
    /// The event feed, swept of what is older than `eventFeedSeconds` (absent: nothing to sweep).
    let events: (any EventFeed)?
    let eventFeedSeconds: Int

    public init(
        jobs: any MaintenanceStore, clientUploads: any ClientUploadStore, jobStore: any JobStore, bucket: any BucketMaintenance,
        ttlSeconds: Int, spool: (any SpoolMaintenance)? = nil, downloadTTLSeconds: Int = 3600,
        stagingPrefix: String = EngineSettings().stagingPrefix, events: (any EventFeed)? = nil, eventFeedSeconds: Int = 86_400
    ) {
        self.jobs = jobs
        self.clientUploads = clientUploads
        self.jobStore = jobStore
        self.bucket = bucket
        self.ttlSeconds = ttlSeconds
        self.spool = spool
        self.downloadTTLSeconds = downloadTTLSeconds
        self.stagingPrefix = stagingPrefix
        self.events = events
        self.eventFeedSeconds = eventFeedSeconds
    }

    /// Removes spool files last written more than the download TTL ago, unless their job is
    /// still queued or running. Returns the files removed.
    @discardableResult
    public func sweepSpool(now: Date = Date()) async throws -> [String] {
        guard let spool else { return [] }
        let running = try await jobs.activeJobIDs()
        var removed: [String] = []
        for file in spool.files()
        where !running.contains(file.jobID)
            && now.timeIntervalSince1970 - file.modified >= Double(downloadTTLSeconds)
        {
            if spool.remove(fileNamed: file.name) { removed.append(file.name) }
        }
        return removed
    }

    /// One pass over recorded uploads under `prefixes`; returns the S3 upload ids aborted.
    @discardableResult
    public func sweep(prefixes: [String] = ["public/", "protected/", "private/"], now: Date = Date()) async throws -> [String] {
        let cutoff = now.timeIntervalSince1970 - Double(ttlSeconds)
        var aborted: [String] = []
        // The records first, so no client completes an upload whose S3 upload is going.
        for expired in try await jobs.expireIdleUploads(before: cutoff, prefixes: prefixes) {
            if let uploadID = expired.uploadID {
                try await bucket.abortIfOpen(key: expired.objectKey, uploadID: uploadID)
                aborted.append(uploadID)
            }
            for segment in expired.tail { try? await bucket.delete(key: segment.key) }
        }
        for kept in try await jobs.releaseRetainedUploads(before: cutoff, prefixes: prefixes) {
            guard let uploadID = kept.uploadID else { continue }
            try await bucket.abortIfOpen(key: kept.objectKey, uploadID: uploadID)
            aborted.append(uploadID)
        }
        for upload in try await clientUploads.idle(since: cutoff, prefixes: prefixes) {
            if upload.state == .creating {
                aborted += try await resolveHalfCreated(upload)
                continue
            }
            // A completion claimed by a request that died: the upload is open again (and idle
            // from now, so a later sweep aborts it if nobody completes it).
            if upload.state == .completing {
                try await clientUploads.unclaim(id: upload.id)
                continue
            }
            guard let uploadID = upload.s3UploadID else { continue }
            // The bytes go straight to S3: its record of the newest part counts as activity too.
            if let newest = try? await bucket.newestPart(key: upload.objectKey, uploadID: uploadID),
                newest.timeIntervalSince1970 > cutoff
            {
                continue
            }
            guard try await clientUploads.aborted(id: upload.id) else { continue }
            try await bucket.abortIfOpen(key: upload.objectKey, uploadID: uploadID)
            aborted.append(uploadID)
        }
        return aborted
    }

    /// A record left `creating` (the gateway died between recording it and hearing S3's upload
    /// id): the uploads S3 lists for exactly its key, begun within a minute of it and owned by
    /// nothing else, are its, and are aborted.
    private func resolveHalfCreated(_ upload: ClientUpload) async throws -> [String] {
        let inUse = try await jobStore.uploadIDsInUse(key: upload.objectKey)
        var aborted: [String] = []
        for candidate in try await bucket.uploads(of: upload.objectKey) where !inUse.contains(candidate.id) {
            guard let initiated = candidate.initiated, abs(initiated.timeIntervalSince1970 - upload.createdAt) <= 60 else { continue }
            try await bucket.abortIfOpen(key: upload.objectKey, uploadID: candidate.id)
            aborted.append(candidate.id)
        }
        try await clientUploads.aborted(id: upload.id)
        return aborted
    }

    /// Staged tail pieces whose job has ended, or that their job no longer lists and that are
    /// older than `graceSeconds` (a piece is written before its job lists it). Pieces of jobs
    /// this database does not know are left alone: the bucket may be shared with another
    /// deployment whose uploads they are. Returns the keys removed.
    @discardableResult
    public func sweepStaging(now: Date = Date(), graceSeconds: Double = 3600) async throws -> [String] {
        let staged = try await bucket.objects(under: stagingPrefix)
        guard !staged.isEmpty else { return [] }
        var byJob: [String: [(key: String, modified: Date?)]] = [:]
        for object in staged {
            let rest = object.key.dropFirst(stagingPrefix.count)
            guard let job = rest.split(separator: "/").first, UUID(uuidString: String(job)) != nil else { continue }
            byJob[String(job).lowercased(), default: []].append(object)
        }
        let known = try await jobs.stagedTails(of: byJob.keys.sorted())
        var removed: [String] = []
        for (job, objects) in byJob {
            guard let tails = known[job] else { continue }
            for object in objects {
                if !tails.ended {
                    let age = object.modified.map { now.timeIntervalSince($0) } ?? 0
                    if tails.keys.contains(object.key) || age < graceSeconds { continue }
                }
                try? await bucket.delete(key: object.key)
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
                if let events {
                    let dropped = try await events.sweep(olderThanSeconds: eventFeedSeconds)
                    if dropped > 0 { logger.info("janitor removed old feed events", ["count": .int(dropped)]) }
                }
            } catch {
                logger.warn("janitor pass failed", ["error": .string(String(describing: type(of: error)))])
            }
            try? await Task.sleep(for: .milliseconds(Int(interval * 1000)))
        }
    }
}

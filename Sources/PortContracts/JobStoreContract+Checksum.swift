import Testing
import TransferEngine

/// The job store's part in whole-object checksums: a completion keeps the checksum on the job
/// and, in the same write, as the checksum of its object at its ETag.
extension JobStoreContract {
    static let aCompletedJobKeepsItsObjectsChecksum = ContractCase<StoreFixture>(
        "a completed job keeps its checksum and records it for its object at its ETag; a failed one keeps none"
    ) { f in
        let key = f.key("checksummed"), checksum = ObjectChecksum(algorithm: .crc32c, value: "yZRlqg==")
        let made = try await f.jobs.insert(job(f.owner("alice"), key: key))
        let (_, lease) = try await claimNext(f)
        try await f.jobs.finish(lease, state: .completed, etag: "\"c1\"", error: nil, checksum: checksum)
        #expect(try await f.jobs.job(id: made.id)?.checksum == checksum)
        if let checksums = f.checksums {
            #expect(try await checksums.checksum(ofKey: key, etag: "\"c1\"") == checksum)
            #expect(try await checksums.checksum(ofKey: key, etag: "\"other\"") == nil, "another version has none")
            let replaced = ObjectChecksum(algorithm: .sha256, value: "uU0nuZNNPgilLlLX2n2r+sSE7+N6U4DukIj3rOLvzek=")
            try await checksums.record(replaced, key: key, etag: "\"c1\"")
            #expect(try await checksums.checksum(ofKey: key, etag: "\"c1\"") == replaced)
        }

        let failed = try await f.jobs.insert(job(f.owner("alice"), key: f.key("failed")))
        let (_, failedLease) = try await claimNext(f)
        try await f.jobs.finish(failedLease, state: .failed, etag: "\"f1\"", error: failure(.accessDenied), checksum: checksum)
        #expect(try await f.jobs.job(id: failed.id)?.checksum == nil)
        if let checksums = f.checksums { #expect(try await checksums.checksum(ofKey: f.key("failed"), etag: "\"f1\"") == nil) }
    }
}

import Adapters
import Crypto
import Foundation
import TestSupport
import Testing
import TransferEngine

/// The whole-object checksum a copy or import job ends with (`JobRunner+Checksum`): the parts'
/// CRCs combined where the bytes passed through, the source's known checksum for a copy.
@Suite struct JobRunnerChecksumTests {
    static let mib = 1024 * 1024

    static func crc(_ bytes: [UInt8]) -> ObjectChecksum { .crc32c(bytes.withUnsafeBytes { Digest.crc32c($0) }) }
    static func body(_ count: Int, seed: UInt8) -> [UInt8] { (0..<count).map { UInt8(truncatingIfNeeded: $0 &* 7) ^ seed } }

    /// Runs one job of `kind` from `source` to `key` with the twins; the job as it ended.
    static func run(
        _ kind: Job.Kind, source: JobSource, key: String, store: InMemoryJobStore, objects: InMemoryObjectStore,
        clock: ManualClock, fetcher: (any SourceFetcher)? = nil
    ) async throws -> Job {
        let made = try await store.insert(
            Job(
                id: UUID().uuidString.lowercased(), owner: "alice", kind: kind, state: .queued, objectKey: key, source: source,
                bytesTotal: nil, partSize: Int64(5 * mib)))
        var settings = EngineSettings()
        settings.leaseMilliseconds = 30_000
        let spool = try DirectorySpool(directory: NSTemporaryDirectory() + "checksum-spool-" + UUID().uuidString)
        let runner = JobRunner(
            store: store, objects: objects, fetcher: fetcher, spool: spool, settings: settings, clock: clock, checksums: store)
        let (job, lease) = try #require(try await store.claim(owner: "i", leaseMilliseconds: 30_000))
        #expect(job.id == made.id)
        _ = try await driving(clock) { try await runner.run(job, lease: lease) }
        return try #require(try await store.job(id: made.id))
    }

    @Test(arguments: [1000, 12 * 1024 * 1024 + 5])
    func anImportReportsItsObjectsCRC32C(size: Int) async throws {
        let clock = ManualClock(), store = InMemoryJobStore(clock: clock), objects = InMemoryObjectStore(clock: clock)
        let bytes = Self.body(size, seed: 3)
        let job = try await Self.run(
            .import, source: .url("https://example.com/f"), key: "imported", store: store, objects: objects, clock: clock,
            fetcher: InMemoryFetcher(body: bytes, ranges: true))
        #expect(job.state == .completed && job.checksum == Self.crc(bytes))
        #expect(try await store.checksum(ofKey: "imported", etag: try #require(job.etag)) == Self.crc(bytes))
    }

    @Test func aStreamedImportReportsItsObjectsCRC32C() async throws {
        let clock = ManualClock(), store = InMemoryJobStore(clock: clock), objects = InMemoryObjectStore(clock: clock)
        let bytes = Self.body(11 * Self.mib + 1, seed: 5)
        let job = try await Self.run(
            .import, source: .url("https://example.com/s"), key: "streamed", store: store, objects: objects, clock: clock,
            fetcher: InMemoryFetcher(body: bytes, ranges: false))
        #expect(job.state == .completed && job.checksum == Self.crc(bytes))
    }

    /// A copy's bytes do not pass through the gateway: it carries the source's checksum over
    /// when the gateway knows it for the source's ETag, and otherwise reads the new object back
    /// once and sums it.
    @Test(arguments: [1000, 12 * 1024 * 1024 + 5])
    func aCopyCarriesTheSourcesKnownChecksumOver(size: Int) async throws {
        let clock = ManualClock(), store = InMemoryJobStore(clock: clock), objects = InMemoryObjectStore(clock: clock)
        let bytes = Self.body(size, seed: 9)
        objects.put("known", bytes)
        objects.put("unknown", bytes)
        let etag = try await objects.properties(of: "known").etag
        try await store.record(Self.crc(bytes), key: "known", etag: etag)
        let copied = try await Self.run(
            .copy, source: .object(ObjectSource(key: "known")), key: "copy-of-known", store: store, objects: objects, clock: clock)
        #expect(copied.state == .completed && copied.checksum == Self.crc(bytes))
        let blind = try await Self.run(
            .copy, source: .object(ObjectSource(key: "unknown")), key: "copy-of-unknown", store: store, objects: objects, clock: clock)
        #expect(blind.state == .completed && blind.checksum == Self.crc(bytes), "read back and summed")
    }
}

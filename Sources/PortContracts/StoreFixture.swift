import Foundation
import Gateway
import TestSupport
import TransferEngine

/// The ports one database holds — jobs, client uploads, idempotency keys — as the contract
/// cases of `JobStoreContract`, `ClientUploadStoreContract` and `IdempotencyStoreContract` see
/// them: the in-memory twins sharing one memory and one clock (`inMemory()`), or the PostgreSQL
/// adapters sharing one database (IntegrationTests). The three share a fixture because their
/// rules cross: an identity's open uploads count upload jobs and client uploads together.
public struct StoreFixture: ContractFixture {
    /// The job store, with its upload-job extension.
    public let jobs: any UploadJobStore
    /// The client-driven uploads, in the same database as `jobs`.
    public let clientUploads: any ClientUploadStore
    /// The idempotency keys, in the same database.
    public let idempotency: any IdempotencyStore
    /// The whole-object checksums the job store's completions record (absent: those cases
    /// check only the job's own `checksum`).
    public let checksums: (any ObjectChecksumStore)?
    /// Unique to this fixture: every owner a case names (`owner(_:)`) and every object key it
    /// makes (`key(_:)`) carries it, so a database shared with other suites shows a case only
    /// its own rows.
    public let tag: String
    private let ager: @Sendable (Int) async throws -> Void
    private let clock: @Sendable () async throws -> Double
    private let cleanup: @Sendable () async -> Void

    /// `age`: makes `milliseconds` pass for everything the fixture's owners stored (see
    /// `age(milliseconds:)`). `now`: the stores' clock, seconds since 1970. `tearDown`: removes
    /// the fixture's rows.
    public init(
        jobs: any UploadJobStore, clientUploads: any ClientUploadStore, idempotency: any IdempotencyStore, tag: String,
        age: @escaping @Sendable (Int) async throws -> Void, now: @escaping @Sendable () async throws -> Double,
        tearDown: @escaping @Sendable () async -> Void = {}, checksums: (any ObjectChecksumStore)? = nil
    ) {
        self.checksums = checksums
        self.jobs = jobs
        self.clientUploads = clientUploads
        self.idempotency = idempotency
        self.tag = tag
        self.ager = age
        self.clock = now
        self.cleanup = tearDown
    }

    /// An identity of this fixture's own, named `name`.
    public func owner(_ name: String) -> String { "\(name)-\(tag)" }

    /// An object key of this fixture's own, ending in `name`.
    public func key(_ name: String) -> String { "contracts/\(tag)/\(name)" }

    /// As if `milliseconds` had passed since everything the fixture's owners stored so far was
    /// written: their rows' timestamps, leases and keys that much older. The twins' clock moves
    /// on; in PostgreSQL the rows' times move back, so no case waits for the wall clock.
    public func age(milliseconds: Int) async throws { try await ager(milliseconds) }

    /// The stores' time now, in seconds since 1970 (a client upload's idle cutoff is on it).
    public func now() async throws -> Double { try await clock() }

    /// Removes the fixture's rows.
    public func tearDown() async { await cleanup() }

    /// The twins, sharing one memory (the client uploads linked to the jobs) and one manual clock.
    public static func inMemory() -> StoreFixture {
        let clock = ManualClock(start: 1_800_000_000_000)
        let seconds: @Sendable () -> Double = { Double(clock.now()) / 1000 }
        let jobs = InMemoryJobStore(clock: clock)
        return StoreFixture(
            jobs: jobs, clientUploads: InMemoryClientUploadStore(now: seconds, jobs: jobs),
            idempotency: InMemoryIdempotencyStore(now: seconds), tag: String(UUID().uuidString.prefix(8)).lowercased(),
            age: { clock.advance(by: $0) }, now: { seconds() }, checksums: jobs)
    }
}

import Foundation
import TestSupport
import TransferEngine

/// An object store as `ObjectStoreContract`'s cases see it: the in-memory twin (`inMemory()`)
/// or the S3 adapter on a real bucket (IntegrationTests), with a key prefix of the fixture's own.
public struct ObjectStoreFixture: ContractFixture {
    /// The store under test.
    public let store: any ObjectStore
    /// Where every key of the fixture lives, unique to it (`tests/port-contracts/<uuid>/` live).
    public let prefix: String
    private let cleanup: @Sendable () async -> Void

    /// `tearDown`: removes what is left under `prefix` (objects, unfinished uploads).
    public init(store: any ObjectStore, prefix: String, tearDown: @escaping @Sendable () async -> Void = {}) {
        self.store = store
        self.prefix = prefix
        self.cleanup = tearDown
    }

    /// A key of the fixture's own, ending in `name`.
    public func key(_ name: String) -> String { prefix + name }

    /// Removes what the case left under `prefix`.
    public func tearDown() async { await cleanup() }

    /// The twin, on a manual clock.
    public static func inMemory() -> ObjectStoreFixture {
        ObjectStoreFixture(
            store: InMemoryObjectStore(clock: ManualClock(start: 1_800_000_000_000)),
            prefix: "tests/port-contracts/\(UUID().uuidString.lowercased())/")
    }
}

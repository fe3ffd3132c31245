import Adapters
import Synchronization
import TransferEngine

/// A spool that counts the files it is asked to create and the checks of the tail's room (one
/// for each chunk of the body written to it).
final class CountingSpool: Spool {
    let base: DirectorySpool
    private let creations = Atomic<Int>(0)
    private let tailChecks = Atomic<Int>(0)

    init(_ base: DirectorySpool) { self.base = base }

    var created: Int { creations.load(ordering: .relaxed) }

    /// For the object store's `beforePart`: holds each of `parts` until the chunks of the part
    /// after it (256 KiB, twenty to a 5 MiB part) have all come to be written, its tail then
    /// full: the client is faster than S3.
    func untilTheTailIsFull(after parts: ClosedRange<Int>) -> @Sendable (Int) async throws -> Void {
        { [self] part in
            guard parts.contains(part) else { return }
            _ = await poll { self.tailChecks.load(ordering: .relaxed) >= 20 * (part + 1) }
        }
    }

    func open(jobID: String, name: SpoolName, create: Bool, truncate: Bool) throws -> SpoolFile? {
        if create { creations.add(1, ordering: .relaxed) }
        return try base.open(jobID: jobID, name: name, create: create, truncate: truncate)
    }
    func remove(jobID: String, name: SpoolName) { base.remove(jobID: jobID, name: name) }
    func removeAll(jobID: String, keeping: Set<SpoolName>) { base.removeAll(jobID: jobID, keeping: keeping) }
    func rename(jobID: String, from: SpoolName, to: SpoolName) throws { try base.rename(jobID: jobID, from: from, to: to) }
    func reserve(jobID: String, name: SpoolName, bytes: Int64, owner: String) async throws {
        try await base.reserve(jobID: jobID, name: name, bytes: bytes, owner: owner)
    }
    func grow(jobID: String, name: SpoolName, to bytes: Int64, owner: String) async throws {
        try await base.grow(jobID: jobID, name: name, to: bytes, owner: owner)
    }
    func growIfItFits(jobID: String, name: SpoolName, to bytes: Int64, owner: String) -> Bool {
        base.growIfItFits(jobID: jobID, name: name, to: bytes, owner: owner)
    }
    func reserved(jobID: String, name: SpoolName) -> Int64 {
        if name == .tail { tailChecks.add(1, ordering: .relaxed) }
        return base.reserved(jobID: jobID, name: name)
    }
    func shrink(jobID: String, name: SpoolName, to bytes: Int64) { base.shrink(jobID: jobID, name: name, to: bytes) }
    var usage: (used: Int64, capacity: Int64) { base.usage }
}

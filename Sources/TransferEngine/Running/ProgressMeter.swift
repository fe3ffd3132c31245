import Synchronization

/// A job's live byte count while its work runs (bytes received onto the spool, bytes read from a
/// source), set by the work and read by the lease's renewal, which writes it at most once a
/// second and only when it moved (`LeaseLifetime`).
///
/// Every change of the figure, and every `touch` (a part recorded, where no byte count moves),
/// also counts as a sign of life: the stall limit (`LeaseLifetime.stallMilliseconds`) watches
/// `moves`.
public final class ProgressMeter: Sendable {
    private let bytes: Atomic<Int64>
    private let signs = Atomic<Int>(0)

    public init(_ start: Int64 = 0) {
        bytes = Atomic(start)
    }

    public var value: Int64 { bytes.load(ordering: .relaxed) }

    /// How many times bytes were seen moving so far.
    public var moves: Int { signs.load(ordering: .relaxed) }

    public func set(_ value: Int64) {
        bytes.store(value, ordering: .relaxed)
        touch()
    }

    public func add(_ delta: Int64) {
        bytes.add(delta, ordering: .relaxed)
        if delta != 0 { touch() }
    }

    /// Bytes moved without changing the figure (a part finished).
    public func touch() { signs.add(1, ordering: .relaxed) }

    private let waits = Atomic<Int>(0)

    /// Whether the work waits for the gateway's own room (spool) now: no byte can move, and
    /// it is not the source's or S3's fault, so the stall limit does not count that time.
    public var waitingForRoom: Bool { waits.load(ordering: .relaxed) > 0 }

    /// Runs `body`, a wait for room, as such (`waitingForRoom`).
    func waiting<T>(_ body: () async throws -> T) async rethrows -> T {
        waits.add(1, ordering: .relaxed)
        defer {
            waits.subtract(1, ordering: .relaxed)
            touch()
        }
        return try await body()
    }

    /// How often a moving figure is written.
    static let intervalMilliseconds = 1000
}

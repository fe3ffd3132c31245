import Synchronization

/// A job's live byte count while its work runs (bytes received onto the spool, bytes read from a
/// source), set by the work and read by the lease's renewal, which writes it at most once a
/// second and only when it moved (`LeaseLifetime`).
public final class ProgressMeter: Sendable {
    private let bytes: Atomic<Int64>

    public init(_ start: Int64 = 0) {
        bytes = Atomic(start)
    }

    public var value: Int64 { bytes.load(ordering: .relaxed) }

    public func set(_ value: Int64) { bytes.store(value, ordering: .relaxed) }

    public func add(_ delta: Int64) { bytes.add(delta, ordering: .relaxed) }

    /// How often a moving figure is written.
    static let intervalMilliseconds = 1000
}

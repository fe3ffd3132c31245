import Synchronization

/// Set once a job has begun to write its object (`JobStore.beginCompleting`): from then on the
/// job's deadline no longer stops it, since a job whose object was written must end completed,
/// never failed or canceled by a timer.
final class CompletionMark: Sendable {
    private let marked = Atomic<Bool>(false)

    init() {}

    var isMarked: Bool { marked.load(ordering: .acquiring) }

    /// Records the step in the store under `lease` (refused when the job was paused, canceled or
    /// taken over: `LeaseLost`, and the object must not be written), then marks it here.
    func begin(_ store: any JobStore, _ lease: Lease) async throws {
        // Marked first: a deadline passing during the write must not stop a job whose step
        // the store may already hold.
        marked.store(true, ordering: .releasing)
        do {
            try await store.beginCompleting(lease)
        } catch {
            marked.store(false, ordering: .releasing)
            throw error
        }
    }
}

import Synchronization

/// Watches a streamed answer's writes: when the same write is still pending at two looks
/// `milliseconds` apart (the client is not reading), `onStall` runs, once per stall. One task
/// per stream, not one per write.
final class StallWatch: Sendable {
    /// Writes begun and ended: a write is pending while they differ.
    private let begun = Atomic<Int>(0)
    private let written = Atomic<Int>(0)
    private let task: Mutex<Task<Void, Never>?> = Mutex(nil)

    init(milliseconds: Int, onStall: @escaping @Sendable () -> Void) {
        let watched = Task { [weak self] in
            var pendingBefore = -1
            var reported = false
            while !Task.isCancelled {
                try? await Task.sleep(for: .milliseconds(milliseconds))
                guard let self else { return }
                let begun = self.begun.load(ordering: .acquiring), written = self.written.load(ordering: .acquiring)
                // The write pending now (its number), if any.
                let pending = begun > written ? begun : -1
                if pending >= 0 && pending == pendingBefore {
                    if !reported { onStall() }
                    reported = true
                } else {
                    reported = false
                }
                pendingBefore = pending
            }
        }
        task.withLock { $0 = watched }
    }

    /// Runs one write under watch.
    func write(_ body: () async throws -> Void) async throws {
        begun.add(1, ordering: .acquiringAndReleasing)
        defer { written.add(1, ordering: .acquiringAndReleasing) }
        try await body()
    }

    func stop() { task.withLock { $0?.cancel() } }
}

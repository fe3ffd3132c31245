import Synchronization

/// Watches a streamed answer's writes: when one has waited `milliseconds` with nothing written
/// (the client is not reading), `onStall` runs, once per stall. One task per stream, not one per
/// write.
final class StallWatch: Sendable {
    private let written = Atomic<Int>(0)
    private let writing = Atomic<Bool>(false)
    private let task: Mutex<Task<Void, Never>?> = Mutex(nil)

    init(milliseconds: Int, onStall: @escaping @Sendable () -> Void) {
        let watched = Task { [weak self] in
            var seen = -1
            var reported = false
            while !Task.isCancelled {
                try? await Task.sleep(for: .milliseconds(milliseconds))
                guard let self else { return }
                let now = self.written.load(ordering: .acquiring)
                if self.writing.load(ordering: .acquiring) && now == seen {
                    if !reported { onStall() }
                    reported = true
                } else {
                    reported = false
                }
                seen = now
            }
        }
        task.withLock { $0 = watched }
    }

    /// Runs one write under watch.
    func write(_ body: () async throws -> Void) async throws {
        writing.store(true, ordering: .releasing)
        defer {
            writing.store(false, ordering: .releasing)
            written.add(1, ordering: .acquiringAndReleasing)
        }
        try await body()
    }

    func stop() { task.withLock { $0?.cancel() } }
}

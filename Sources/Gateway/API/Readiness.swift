import Synchronization

/// Runs every check concurrently, each bounded by `timeout` seconds. The result is kept for
/// `cacheSeconds`, and callers that arrive while a run is under way share it: however many
/// clients ask, the dependencies are asked about once a second.
final class Readiness: Sendable {
    /// Each check's name, its failure (nil: ok), and whether it is advisory.
    typealias Results = [(name: String, failure: String?, advisory: Bool)]

    private struct State {
        var result: Results?
        var at: ContinuousClock.Instant?
        var running: Task<Results, Never>?
    }

    let checks: [any DependencyCheck]
    let timeout: Int
    let cacheSeconds: Double
    private let state = Mutex(State())

    init(checks: [any DependencyCheck], timeout: Int, cacheSeconds: Double = 1) {
        self.checks = checks
        self.timeout = timeout
        self.cacheSeconds = cacheSeconds
    }

    func run() async -> Results {
        let now = ContinuousClock.now
        let task = state.withLock { s -> Task<Results, Never> in
            if let result = s.result, let at = s.at, now - at < .milliseconds(Int(cacheSeconds * 1000)) {
                return Task { result }
            }
            if let running = s.running { return running }
            let running = Task { await self.ask() }
            s.running = running
            return running
        }
        return await task.value
    }

    private func ask() async -> Results {
        let checks = self.checks, timeout = self.timeout
        let results = await withTaskGroup(of: (Int, String?).self) { group in
            for (index, check) in checks.enumerated() {
                group.addTask { (index, await check.check(timeout: timeout)) }
            }
            var results: [(Int, String?)] = []
            for await result in group { results.append(result) }
            return results.sorted { $0.0 < $1.0 }.map { (name: checks[$0.0].name, failure: $0.1, advisory: checks[$0.0].isAdvisory) }
        }
        state.withLock { s in
            s.result = results
            s.at = ContinuousClock.now
            s.running = nil
        }
        return results
    }
}

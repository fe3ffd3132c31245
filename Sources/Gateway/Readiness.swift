/// Something `/readyz` asks: does this dependency answer?
public protocol DependencyCheck: Sendable {
    var name: String { get }
    /// nil when healthy, else a short reason without secrets.
    func check(timeout: Int) async -> String?
}

/// Runs every check concurrently.
struct Readiness: Sendable {
    let checks: [any DependencyCheck]
    let timeout: Int

    func run() async -> [(String, String?)] {
        await withTaskGroup(of: (Int, String, String?).self) { group in
            for (index, check) in checks.enumerated() {
                group.addTask { (index, check.name, await check.check(timeout: timeout)) }
            }
            var results: [(Int, String, String?)] = []
            for await result in group { results.append(result) }
            return results.sorted { $0.0 < $1.0 }.map { ($0.1, $0.2) }
        }
    }
}

import Foundation

/// Holds a client's transfers to a byte rate: a request of `n` bytes starts no sooner than the
/// bytes before it would have moved at `bytesPerSecond` (shared by every task of one client).
/// Requests are the unit, so within one part the rate is the network's; over many it holds.
actor Pacer {
    let bytesPerSecond: Double
    private var nextStart: Double?

    init(bytesPerSecond: Int64) {
        self.bytesPerSecond = Double(max(1, bytesPerSecond))
    }

    /// Waits until `bytes` may start moving.
    func take(_ bytes: Int64) async throws {
        let now = ProcessInfo.processInfo.systemUptime
        let start = max(now, nextStart ?? now)
        nextStart = start + Double(bytes) / bytesPerSecond
        let wait = start - now
        if wait > 0 { try await Task.sleep(nanoseconds: UInt64(wait * 1e9)) }
    }
}

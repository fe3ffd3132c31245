/// `bandwidthLimit` as a byte rate: bytes counted from a start may go no sooner than the rate
/// allows, so `wait(forBytes:)` returns once the bytes counted so far would have moved at it.
struct Pace: Sendable {
    let start: Int
    let bytesPerSecond: Int64

    init?(bytesPerSecond: Int64?, clock: any EngineClock) {
        guard let bytesPerSecond, bytesPerSecond > 0 else { return nil }
        self.start = clock.now()
        self.bytesPerSecond = bytesPerSecond
    }

    /// When `bytes` counted from the start may have moved.
    func time(forBytes bytes: Int64) -> Int {
        start + Int((Double(bytes) * 1000 / Double(bytesPerSecond)).rounded(.up))
    }
}

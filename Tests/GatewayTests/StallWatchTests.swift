import Synchronization
import Testing

@testable import Gateway

/// The stall watch: a write still pending at two looks apart is a stall; writes that go out,
/// however slowly spaced, are not.
@Suite struct StallWatchTests {
    @Test func aWriteThatDoesNotGoOutIsAStall() async throws {
        let stalls = Atomic<Int>(0)
        let watch = StallWatch(milliseconds: 50) { stalls.add(1, ordering: .relaxed) }
        // The write goes out only once the stall is seen (bounded), and a while after that.
        try await watch.write {
            let deadline = ContinuousClock.now + .seconds(20)
            while stalls.load(ordering: .relaxed) == 0 && ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(10)) }
            try await Task.sleep(for: .milliseconds(300))
        }
        watch.stop()
        #expect(stalls.load(ordering: .relaxed) == 1, "one stall, reported once")
    }

    @Test func writesWithPausesBetweenThemAreNotStalls() async throws {
        let stalls = Atomic<Int>(0)
        let watch = StallWatch(milliseconds: 50) { stalls.add(1, ordering: .relaxed) }
        for _ in 0..<6 {
            // The writer waits (on S3, say) between writes; each write goes out at once.
            try await Task.sleep(for: .milliseconds(60))
            try await watch.write {}
        }
        watch.stop()
        #expect(stalls.load(ordering: .relaxed) == 0)
    }
}

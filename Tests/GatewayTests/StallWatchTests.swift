import Synchronization
import Testing
@testable import Gateway

/// The stall watch: a write still pending at two looks apart is a stall; writes that go out,
/// however slowly spaced, are not.
@Suite struct StallWatchTests {
    @Test func aWriteThatDoesNotGoOutIsAStall() async throws {
        let stalls = Atomic<Int>(0)
        let watch = StallWatch(milliseconds: 50) { stalls.add(1, ordering: .relaxed) }
        try await watch.write { try await Task.sleep(for: .milliseconds(400)) }
        watch.stop()
        #expect(stalls.load(ordering: .relaxed) == 1, "one stall, reported once")
    }

    @Test func writesWithPausesBetweenThemAreNotStalls() async throws {
        let stalls = Atomic<Int>(0)
        let watch = StallWatch(milliseconds: 50) { stalls.add(1, ordering: .relaxed) }
        for _ in 0..<6 {
            // The writer waits (on S3, say) between writes; each write goes out quickly.
            try await Task.sleep(for: .milliseconds(60))
            try await watch.write { try await Task.sleep(for: .milliseconds(5)) }
        }
        watch.stop()
        #expect(stalls.load(ordering: .relaxed) == 0)
    }
}

import Synchronization
import Testing

@testable import HTTPServer

/// A streamed body's backpressure: the connection may read what is left of the high water;
/// once the bytes reach it, nothing more until the handler has taken them down to half, when
/// the connection is told once.
@Suite struct RequestBodyTests {
    final class Demands: Sendable {
        let count = Atomic(0)
    }

    static func body(highWater: Int, demands: Demands) -> RequestBody {
        RequestBody(expectedLength: 1 << 30, highWater: highWater, onDemand: { demands.count.add(1, ordering: .relaxed) })
    }

    @Test func roomIsWhatTheHighWaterLeaves() {
        let body = Self.body(highWater: 1000, demands: Demands())
        #expect(body.room == 1000)
        body.deliver([UInt8](repeating: 1, count: 300)[...])
        #expect(body.room == 1000 - 300 - RequestBody.chunkOverhead)
        // A chunk whose buffer is larger than its bytes counts as its buffer.
        body.deliver([UInt8](repeating: 1, count: 100)[...], held: 400)
        #expect(body.room == 1000 - 300 - 400 - 2 * RequestBody.chunkOverhead)
    }

    @Test func afterTheHighWaterTheConnectionWaitsForHalf() async throws {
        let demands = Demands()
        let body = Self.body(highWater: 1000, demands: demands)
        for _ in 0..<4 { body.deliver([UInt8](repeating: 1, count: 200)[...]) }  // 4 × 264 counted
        #expect(body.room == 0)
        _ = try await body.read()  // 792 left: under the high water, over half of it
        #expect(body.room == 0)
        let asked = demands.count.load(ordering: .relaxed)  // the first read's demand
        _ = try await body.read()  // 528 left: still over half
        #expect(body.room == 0)
        #expect(demands.count.load(ordering: .relaxed) == asked)
        _ = try await body.read()  // 264 left: the connection is told, and may read again
        #expect(demands.count.load(ordering: .relaxed) == asked + 1)
        #expect(body.room == 1000 - 264)
    }

    @Test func aReaderThatFindsNothingLetsTheConnectionRead() async throws {
        let demands = Demands()
        let body = Self.body(highWater: 100, demands: demands)
        body.deliver([UInt8](repeating: 1, count: 100)[...])
        #expect(body.room == 0)
        _ = try await body.read()
        #expect(body.room == 100)
        let reader = Task { try await body.read() }
        // The waiting reader asks for bytes; what the connection then delivers reaches it.
        while demands.count.load(ordering: .relaxed) < 2 { await Task.yield() }
        body.deliver([7][...])
        #expect(try await reader.value == [7][...])
    }
}

import Testing

@testable import S3

/// A streamed body's arrays handed back by its reader carry later chunks.
@Suite struct BodyStreamTests {
    static func address(_ chunk: ArraySlice<UInt8>) -> UInt {
        chunk.withUnsafeBufferPointer { UInt(bitPattern: $0.baseAddress) }
    }

    static func offer(_ stream: BodyStream, _ byte: UInt8, _ count: Int) {
        let bytes = [UInt8](repeating: byte, count: count)
        _ = bytes.withUnsafeBytes { stream.offer($0, status: 200) }
    }

    /// The next chunk lands in the array of the one handed back: no new array, no new pages.
    @Test func aChunkHandedBackCarriesTheNext() async throws {
        let stream = BodyStream(limit: .max)
        Self.offer(stream, 1, 256 * 1024)
        let first = try #require(try await stream.next())
        let address = Self.address(first)
        stream.giveBack(consume first)
        #expect(stream.keptArrayCount == 1)
        Self.offer(stream, 2, 100 * 1024)
        #expect(stream.keptArrayCount == 0)
        let second = try #require(try await stream.next())
        #expect(Self.address(second) == address)
        #expect(second.count == 100 * 1024 && second.allSatisfy { $0 == 2 })
    }

    /// A chunk its reader still holds is never written under it: the next chunk goes elsewhere
    /// and the held bytes stay what they were.
    @Test func aChunkStillHeldIsNotWrittenUnder() async throws {
        let stream = BodyStream(limit: .max)
        Self.offer(stream, 1, 256 * 1024)
        let first = try #require(try await stream.next())
        let held = first
        stream.giveBack(consume first)
        Self.offer(stream, 2, 256 * 1024)
        let second = try #require(try await stream.next())
        #expect(Self.address(second) != Self.address(held))
        #expect(held.allSatisfy { $0 == 1 } && second.allSatisfy { $0 == 2 })
    }

    /// What is kept stays within the stream's capacity with what waits: an array handed back
    /// past it is let go.
    @Test func keptArraysStayWithinTheCapacity() async throws {
        let stream = BodyStream(capacity: 600 * 1024, limit: .max)
        Self.offer(stream, 1, 256 * 1024)
        Self.offer(stream, 2, 256 * 1024)
        let first = try #require(try await stream.next())
        let second = try #require(try await stream.next())
        Self.offer(stream, 3, 256 * 1024)
        let third = try #require(try await stream.next())
        stream.giveBack(consume first)
        stream.giveBack(consume second)
        #expect(stream.keptArrayCount == 2)
        stream.giveBack(consume third)
        #expect(stream.keptArrayCount == 2, "a third 256 KiB array would pass 600 KiB")
        // Waiting bytes count too: with 256 KiB waiting, one array is taken for them and none
        // comes back past the capacity.
        Self.offer(stream, 4, 256 * 1024)
        #expect(stream.keptArrayCount == 1)
    }

    /// Small writes into arrays handed back count as the arrays' memory, not their bytes: what
    /// waits never holds more than the capacity, however small libcurl's writes.
    @Test func smallWritesIntoKeptArraysCountTheirMemory() async throws {
        let capacity = 600 * 1024
        let stream = BodyStream(capacity: capacity, limit: .max)
        Self.offer(stream, 1, 256 * 1024)
        Self.offer(stream, 2, 256 * 1024)
        let first = try #require(try await stream.next())
        let second = try #require(try await stream.next())
        stream.giveBack(consume first)
        stream.giveBack(consume second)
        #expect(stream.keptArrayCount == 2)
        let small = [UInt8](repeating: 3, count: 1024)
        var accepted = 0
        while case .accepted = small.withUnsafeBytes({ stream.offer($0, status: 200) }) { accepted += 1 }
        var held = 0
        for _ in 0..<accepted {
            let chunk = try #require(try await stream.next())
            #expect(chunk.count == 1024)
            held += Array(chunk).capacity
        }
        #expect(held <= capacity, "\(accepted) writes of 1 KiB hold \(held) bytes")
    }
}

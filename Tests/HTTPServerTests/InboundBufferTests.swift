import Testing

@testable import HTTPServer

#if canImport(Glibc)
    import Glibc
#endif

/// A non-blocking socket holding `bytes`, its peer closed: reads see them, then the end.
private func socketHolding(_ bytes: [UInt8]) throws -> Int32 {
    var fds: [Int32] = [0, 0]
    try #require(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &fds) == 0)
    try #require(fcntl(fds[0], F_SETFL, O_NONBLOCK) == 0)
    let written = bytes.withUnsafeBytes { Glibc.write(fds[1], $0.baseAddress, $0.count) }
    try #require(written == bytes.count)
    Glibc.close(fds[1])
    return fds[0]
}

private func readable(_ buffer: borrowing InboundBuffer) -> [UInt8] {
    buffer.withReadableBytes { Array($0) }
}

@Suite struct InboundBufferTests {
    let body = (0..<400).map { UInt8(truncatingIfNeeded: $0 &* 7) }

    /// A body read and handed on a read at a time (as the connection pumps it) keeps the storage
    /// it grew to, so each read can take up to the most: not a new small buffer after every pump.
    @Test func readsGrowToTheMostAndKeepTheStorageAsTheBodyIsConsumed() throws {
        let fd = try socketHolding(body)
        defer { Glibc.close(fd) }
        var buffer = InboundBuffer(initialCapacity: 16, maxCapacity: 128)
        var sizes: [Int] = [], capacities: [Int] = [], got: [UInt8] = []
        while case .bytes(let n) = buffer.read(from: fd) {
            sizes.append(n)
            got += readable(buffer)
            buffer.consume(buffer.readableCount)
            capacities.append(buffer.capacity)
        }
        #expect(got == body)
        #expect(sizes == [16, 32, 64, 128, 128, 32], "each read fills what the last one grew")
        #expect(capacities == [32, 64, 128, 128, 128, 0], "never past the most, kept while reads fill it, given back after a short one")
        #expect(buffer.read(from: fd) == .endOfFile)
    }

    /// A slow sender (each read fills at most half of a large buffer) does not hold the large
    /// buffer between its reads: thousands of trickling uploads would otherwise each pin it.
    @Test func aSlowSendersLargeBufferIsGivenBackBetweenReads() throws {
        var buffer = InboundBuffer(initialCapacity: 16, maxCapacity: 128)
        let fast = try socketHolding(Array(body.prefix(16 + 32 + 64)))
        defer { Glibc.close(fast) }
        while case .bytes = buffer.read(from: fast) { buffer.consume(buffer.readableCount) }
        #expect(buffer.capacity == 128)
        let slow = try socketHolding(Array(body.prefix(64)))
        defer { Glibc.close(slow) }
        #expect(buffer.read(from: slow) == .bytes(64))
        buffer.consume(63)
        #expect(buffer.capacity == 128, "kept while a byte is unread")
        buffer.consume(1)
        #expect(buffer.capacity == 0, "64 of 128: given back")
    }

    /// Idle, a buffer that grew past four times its first size goes back; a small one stays
    /// (an idle keep-alive connection's next request reuses it), and one holding bytes stays.
    @Test(arguments: [(grownBy: 32, released: false), (grownBy: 64, released: false), (grownBy: 65, released: true)])
    func onlyAnEmptyLargeBufferIsGivenBack(grownBy: Int, released: Bool) {
        var buffer = InboundBuffer(initialCapacity: 16, maxCapacity: 128)
        buffer.append(body.prefix(grownBy))
        let grown = buffer.capacity
        buffer.consume(grownBy - 1)
        buffer.releaseIfLarge()
        #expect(buffer.capacity == grown && readable(buffer) == [body[grownBy - 1]], "a byte is still unread")
        buffer.consume(1)
        buffer.releaseIfLarge()
        #expect(buffer.capacity == (released ? 0 : grown))
    }

    /// The buffer after a release reads as a new one.
    @Test func aReleasedBufferReadsAgainFromItsFirstSize() throws {
        var buffer = InboundBuffer(initialCapacity: 16, maxCapacity: 128)
        buffer.append(body.prefix(100))
        buffer.consume(100)
        buffer.releaseIfLarge()
        #expect(buffer.capacity == 0 && buffer.isEmpty && readable(buffer).isEmpty)
        let fd = try socketHolding(Array(body.prefix(10)))
        defer { Glibc.close(fd) }
        #expect(buffer.read(from: fd) == .bytes(10))
        #expect(buffer.capacity == 16 && readable(buffer) == Array(body.prefix(10)))
    }

    /// Consumed bytes at the front are reclaimed before the buffer grows; order is kept.
    @Test func appendingCompactsBeforeGrowing() {
        var buffer = InboundBuffer(initialCapacity: 16, maxCapacity: 128)
        buffer.append(body[0..<10])
        buffer.consume(6)
        buffer.append(body[10..<20])
        #expect(buffer.capacity == 16 && readable(buffer) == Array(body[6..<20]))
        buffer.append(body[20..<30])
        #expect(buffer.capacity == 32 && readable(buffer) == Array(body[6..<30]))
        #expect(buffer.copy(2..<5) == Array(body[8..<11]))
    }

    /// A read after bytes still unread (a head's first half) lands after them.
    @Test func aReadLandsAfterTheUnreadBytes() throws {
        let fd = try socketHolding(Array(body[10..<40]))
        defer { Glibc.close(fd) }
        var buffer = InboundBuffer(initialCapacity: 16, maxCapacity: 128)
        buffer.append(body[0..<12])
        buffer.consume(4)
        while case .bytes = buffer.read(from: fd) {}
        #expect(readable(buffer) == Array(body[4..<12]) + Array(body[10..<40]))
    }
}

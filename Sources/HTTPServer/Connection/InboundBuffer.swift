/// Bytes read from a socket and not yet consumed by the parser or body decoder.
///
/// Starts small so idle keep-alive connections cost little, grows while large reads keep
/// filling it, and compacts instead of growing whenever consumed bytes can be reclaimed. What it
/// has grown to stays while a fast sender's body streams, so it goes through reads of up to
/// `maxCapacity` bytes instead of a new small buffer after every pump. A large buffer emptied
/// after a read that filled at most half of the room it had (a slow sender: thousands of phones
/// trickling uploads) is given back at once, and the connection gives a large one back once it
/// goes idle (`releaseIfLarge`).
///
/// The storage is raw memory that `read` fills: nothing is zeroed first, and only bytes that
/// were written (below `writeIndex`) are ever read. Noncopyable: it owns that memory.
struct InboundBuffer: ~Copyable {
    private var storage: UnsafeMutableRawBufferPointer?
    private var readIndex = 0
    private var writeIndex = 0
    /// Whether the last `read` filled at most half of the room it had (a slow sender).
    private var lastReadWasShort = false
    /// Whether the last `read` filled all the room it had: the kernel may hold more.
    private(set) var lastReadFilledRoom = false
    private let initialCapacity: Int
    private let maxCapacity: Int

    /// What a buffer grows to by default.
    static let largestCapacity = 128 * 1024

    init(initialCapacity: Int = 4096, maxCapacity: Int = InboundBuffer.largestCapacity) {
        precondition(initialCapacity > 0 && maxCapacity >= initialCapacity)
        self.initialCapacity = initialCapacity
        self.maxCapacity = maxCapacity
    }

    deinit { storage?.deallocate() }

    var readableCount: Int { writeIndex - readIndex }
    var isEmpty: Bool { readIndex == writeIndex }
    /// Bytes of storage held: 0 before the first read and after a release.
    var capacity: Int { storage?.count ?? 0 }

    /// Reads once from `fd` into free space at the end.
    mutating func read(from fd: Int32) -> IOResult {
        if writeIndex == capacity { makeRoom() }
        guard let storage else { preconditionFailure("makeRoom leaves room") }
        let room = storage.count - writeIndex
        let result = SystemCall.read(fd, into: UnsafeMutableRawBufferPointer(rebasing: storage[writeIndex...]))
        if case .bytes(let n) = result {
            lastReadWasShort = n <= room / 2
            lastReadFilledRoom = n == room
            writeIndex += n
            // A read that filled every free byte suggests a fast sender: give it more room next time.
            if writeIndex == capacity && capacity < maxCapacity && readIndex == 0 {
                grow(to: min(capacity * 2, maxCapacity))
            }
        }
        return result
    }

    /// Appends bytes directly (tests and pipelined leftovers).
    mutating func append(_ bytes: some Collection<UInt8>) {
        if bytes.isEmpty { return }
        while capacity - writeIndex < bytes.count {
            if readIndex > 0 { makeRoom() } else { grow(to: max(capacity * 2, initialCapacity)) }
        }
        guard let storage else { preconditionFailure("grow allocates") }
        _ = UnsafeMutableRawBufferPointer(rebasing: storage[writeIndex...]).initializeMemory(as: UInt8.self, from: bytes)
        writeIndex += bytes.count
    }

    func withReadableBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        guard let storage else { return try body(UnsafeRawBufferPointer(start: nil, count: 0)) }
        return try body(UnsafeRawBufferPointer(rebasing: storage[readIndex..<writeIndex]))
    }

    /// Copies `range` (relative to the readable bytes) out.
    func copy(_ range: Range<Int>) -> [UInt8] {
        precondition(range.upperBound <= readableCount, "copied past the buffered bytes")
        return withReadableBytes { Array($0[range]) }
    }

    /// Drops `count` bytes from the front; the storage stays for the next read, unless it is
    /// large and the last read filled at most half of it.
    mutating func consume(_ count: Int) {
        precondition(count <= readableCount, "consumed more than was buffered")
        readIndex += count
        if readIndex == writeIndex {
            readIndex = 0
            writeIndex = 0
            if lastReadWasShort { releaseIfLarge() }
        }
    }

    /// Gives the storage back when it holds no bytes and has grown past four times its first
    /// size, so an idle keep-alive connection holds at most a small buffer.
    mutating func releaseIfLarge() {
        guard isEmpty, capacity > initialCapacity * 4, let storage else { return }
        storage.deallocate()
        self.storage = nil
    }

    /// Moves the unread bytes to the front, or grows when no consumed bytes can be reclaimed.
    private mutating func makeRoom() {
        guard readIndex > 0, let base = storage?.baseAddress else {
            return grow(to: max(capacity * 2, initialCapacity))
        }
        let live = readableCount
        base.copyMemory(from: base + readIndex, byteCount: live)
        readIndex = 0
        writeIndex = live
    }

    /// Replaces the storage by `size` bytes holding the unread ones (one allocation, one copy).
    private mutating func grow(to size: Int) {
        let bigger = UnsafeMutableRawBufferPointer.allocate(byteCount: size, alignment: 16)
        let live = readableCount
        if let base = storage?.baseAddress, live > 0 {
            bigger.baseAddress?.copyMemory(from: base + readIndex, byteCount: live)
        }
        storage?.deallocate()
        storage = bigger
        readIndex = 0
        writeIndex = live
    }
}

#if canImport(Glibc)
    import Glibc
#endif

/// Bytes read from a socket and not yet consumed by the parser or body decoder.
///
/// Starts small so idle keep-alive connections cost little, grows while large reads keep
/// filling it, and compacts instead of growing whenever consumed bytes can be reclaimed.
struct InboundBuffer {
    private var storage: [UInt8]
    private var readIndex = 0
    private var writeIndex = 0
    private let initialCapacity: Int
    private let maxCapacity: Int

    init(initialCapacity: Int = 4096, maxCapacity: Int = 128 * 1024) {
        self.initialCapacity = initialCapacity
        self.maxCapacity = maxCapacity
        storage = []
    }

    var readableCount: Int { writeIndex - readIndex }
    var isEmpty: Bool { readIndex == writeIndex }

    /// Reads once from `fd` into free space at the end.
    mutating func read(from fd: Int32) -> IOResult {
        if storage.isEmpty { storage = [UInt8](repeating: 0, count: initialCapacity) }
        if writeIndex == storage.count { makeRoom() }
        let start = writeIndex
        let result = storage.withUnsafeMutableBytes { raw in
            SystemCall.read(fd, into: UnsafeMutableRawBufferPointer(rebasing: raw[start...]))
        }
        if case .bytes(let n) = result {
            writeIndex += n
            // A read that filled every free byte suggests a fast sender: give it more room next time.
            if writeIndex == storage.count && storage.count < maxCapacity && readIndex == 0 {
                grow()
            }
        }
        return result
    }

    /// Appends bytes directly (tests and pipelined leftovers).
    mutating func append(_ bytes: some Collection<UInt8>) {
        if storage.isEmpty { storage = [UInt8](repeating: 0, count: initialCapacity) }
        while storage.count - writeIndex < bytes.count {
            if readIndex > 0 { makeRoom() } else { grow() }
        }
        storage.replaceSubrange(writeIndex..<(writeIndex + bytes.count), with: bytes)
        writeIndex += bytes.count
    }

    func withReadableBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try storage.withUnsafeBytes { raw in
            try body(UnsafeRawBufferPointer(rebasing: raw[readIndex..<writeIndex]))
        }
    }

    /// Copies `range` (relative to the readable bytes) out.
    func copy(_ range: Range<Int>) -> [UInt8] {
        Array(storage[(readIndex + range.lowerBound)..<(readIndex + range.upperBound)])
    }

    mutating func consume(_ count: Int) {
        precondition(count <= readableCount, "consumed more than was buffered")
        readIndex += count
        if readIndex == writeIndex {
            readIndex = 0
            writeIndex = 0
            if storage.count > initialCapacity * 4 { storage = [] }
        }
    }

    private mutating func makeRoom() {
        if readIndex > 0 {
            let live = readableCount
            storage.withUnsafeMutableBytes { raw in
                guard let base = raw.baseAddress else { return }
                base.copyMemory(from: base + readIndex, byteCount: live)
            }
            readIndex = 0
            writeIndex = live
        } else {
            grow()
        }
    }

    /// Doubles the storage, keeping its bytes (one allocation and one copy).
    private mutating func grow() {
        let old = storage.count
        storage = storage.withUnsafeBytes { current in
            [UInt8](unsafeUninitializedCapacity: max(old * 2, initialCapacity)) { buffer, count in
                guard let base = buffer.baseAddress else { count = 0; return }
                if let from = current.baseAddress { UnsafeMutableRawPointer(base).copyMemory(from: from, byteCount: old) }
                memset(base + old, 0, buffer.count - old)
                count = buffer.count
            }
        }
    }
}

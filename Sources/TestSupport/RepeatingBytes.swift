/// `count` bytes where byte `i` is `UInt8(truncatingIfNeeded: (i >> shift) &* multiplier &+ seed)`.
/// The pattern repeats every `256 << shift` bytes, so one period is computed and the rest copied:
/// a debug build spends seconds on a byte-by-byte map of tens of MiB, on the same two threads
/// the live suites beside need for their gateways.
public func repeatingBytes(_ count: Int, seed: UInt8, multiplier: Int = 31, shift: Int = 0) -> [UInt8] {
    let period = min(count, 256 << shift)
    var out = [UInt8](unsafeUninitializedCapacity: max(count, 1)) { buffer, initialized in
        for i in 0..<period { buffer[i] = UInt8(truncatingIfNeeded: (i >> shift) &* multiplier &+ Int(seed)) }
        initialized = period
    }
    while out.count < count {
        let more = min(out.count, count - out.count)
        out.append(contentsOf: out[0..<more])
    }
    return out
}

import Striped
import Testing

/// Thread ids on glibc are the addresses of thread control blocks at the top of each thread's
/// stack: 8 MiB and a guard page apart, with identical low bits. Those must still spread over
/// the stripes (folding shifted bits, as first written, put every thread on one stripe).
@Test func threadsAStackApartLandOnDifferentStripes() {
    let first: UInt = 0x7F3A_1C7F_F6C0
    let ids = (0..<16).map { first + UInt($0) * 0x80_1000 }
    for count in [4, 8, 16] {
        let used = Set(ids.map { Striped<Int>.index(ofThread: $0, count: count) })
        #expect(used.count >= count / 2, "\(count) stripes: \(used.sorted())")
        #expect(used.allSatisfy { (0..<count).contains($0) })
    }
    // Two neighbouring threads, as a server's two event loops usually are.
    #expect(Striped<Int>.index(ofThread: ids[0], count: 8) != Striped<Int>.index(ofThread: ids[1], count: 8))
}

import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// A value split into stripes, each behind its own lock, picked by the calling thread, so
/// threads serving different connections rarely wait for one another or pass one lock's cache
/// line between their cores. Readers combine the stripes. Used for per-request bookkeeping on
/// the hot path: metrics, log buffering, the signing-key and verified-token caches.
public final class Striped<Value: Sendable>: Sendable {
    public final class Stripe: Sendable {
        public let lock: Mutex<Value>
        init(_ value: sending Value) { lock = Mutex(value) }
    }

    public let stripes: [Stripe]

    public init(count: Int = 16, _ make: () -> Value) {
        stripes = (0..<max(1, count)).map { _ in Stripe(make()) }
    }

    /// Runs `body` on the stripe of the current thread.
    public func withLocalLock<R>(_ body: (inout sending Value) -> sending R) -> sending R {
        stripes[Self.index(ofThread: UInt(bitPattern: Int(bitPattern: UInt(pthread_self()))), count: stripes.count)]
            .lock.withLock(body)
    }

    /// A thread's stripe. Thread ids are addresses a stack's size apart (8 MiB and a guard
    /// page, with the same low bits), so they are mixed (SplitMix64's finaliser) before the
    /// high bits pick the stripe: folding shifted bits, as first written, put neighbouring
    /// threads on one stripe.
    public static func index(ofThread id: UInt, count: Int) -> Int {
        var z = UInt64(id)
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        z ^= z >> 31
        return Int(((z >> 32) &* UInt64(count)) >> 32)
    }
}

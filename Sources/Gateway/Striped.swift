import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// A value split into stripes, each behind its own lock, picked by the calling thread, so
/// threads serving different connections rarely wait for one another. Readers combine the
/// stripes. Used for per-request bookkeeping (metrics, log buffering) on the hot path.
final class Striped<Value: Sendable>: Sendable {
    final class Stripe: Sendable {
        let lock: Mutex<Value>
        init(_ value: sending Value) { lock = Mutex(value) }
    }

    let stripes: [Stripe]

    init(count: Int = 16, _ make: () -> Value) {
        stripes = (0..<count).map { _ in Stripe(make()) }
    }

    /// Runs `body` on the stripe of the current thread.
    func withLocalLock<R>(_ body: (inout sending Value) -> sending R) -> sending R {
        let id = UInt(bitPattern: Int(bitPattern: UInt(pthread_self())))
        let index = Int((id >> 8) ^ (id >> 16)) % stripes.count
        return stripes[index].lock.withLock(body)
    }
}

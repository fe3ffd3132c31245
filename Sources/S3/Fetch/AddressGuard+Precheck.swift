import Dispatch
import Synchronization

extension AddressGuard {
    /// What the rules say of a host before any connection: the early answer that lets a route
    /// refuse an import at creation. The guard itself still runs on every connection and
    /// redirect (a name may resolve elsewhere later).
    public enum Precheck: Sendable, Equatable {
        case allowed
        /// `host` (`port`) is, or resolves to, `address`, which falls under `rule`.
        case refused(host: String, port: Int, address: String, rule: String)
        /// Not judged: a name that did not resolve (in time), or too many look-ups in flight.
        /// The fetcher decides when the job runs.
        case undecided
    }

    /// Look-ups run here, never on Swift's cooperative pool: `getaddrinfo` blocks.
    private static let lookups = DispatchQueue(label: "transfer-gateway.address-precheck", attributes: .concurrent)
    /// Look-ups still running (a timed-out one keeps its thread until the resolver gives up).
    private static let deadlines = DispatchQueue(label: "transfer-gateway.address-precheck-deadlines")
    private static let lookupsInFlight = Mutex(0)
    static let maxLookupsInFlight = 16

    /// Resolves `host` and checks its addresses as `resolve` does, answering within `timeout`.
    public func precheck(host: String, port: Int, timeout: Duration) async -> Precheck {
        let admitted = Self.lookupsInFlight.withLock { count in
            guard count < Self.maxLookupsInFlight else { return false }
            count += 1
            return true
        }
        guard admitted else { return .undecided }
        let once = PrecheckOnce()
        return await withCheckedContinuation { continuation in
            once.arm(continuation)
            Self.lookups.async(execute: {
                let answer: Precheck
                switch Result(catching: { () throws(Refusal) -> String in try self.resolve(host: host, port: port) }) {
                case .success: answer = .allowed
                case .failure(.forbidden(host: _, address: let address)):
                    answer = .refused(host: host, port: port, address: address, rule: Self.rule(forAddress: address))
                case .failure(.unresolvable): answer = .undecided
                }
                Self.lookupsInFlight.withLock { $0 -= 1 }
                once.resume(answer)
            })
            let (seconds, attoseconds) = timeout.components
            let nanoseconds = Int(seconds) * 1_000_000_000 + Int(attoseconds / 1_000_000_000)
            // On a queue of its own: lookups blocked in the resolver must not hold the deadline back.
            Self.deadlines.asyncAfter(deadline: .now() + .nanoseconds(nanoseconds)) { once.resume(.undecided) }
        }
    }
}

extension URLFetcher {
    /// The precheck of `url`'s host (as libcurl parses it) under this fetcher's guard;
    /// `.undecided` for a URL it cannot use.
    public func precheck(_ url: String, timeout: Duration) async -> AddressGuard.Precheck {
        guard let target = try? Self.parse(url) else { return .undecided }
        return await addressGuard.precheck(host: target.host, port: target.port, timeout: timeout)
    }
}

/// Resumes the precheck's continuation once: with the look-up's answer or the timeout's.
private final class PrecheckOnce: Sendable {
    private let continuation = Mutex<CheckedContinuation<AddressGuard.Precheck, Never>?>(nil)

    func arm(_ continuation: CheckedContinuation<AddressGuard.Precheck, Never>) {
        self.continuation.withLock { $0 = continuation }
    }

    func resume(_ answer: AddressGuard.Precheck) {
        continuation.withLock { held in
            defer { held = nil }
            return held
        }?.resume(returning: answer)
    }
}

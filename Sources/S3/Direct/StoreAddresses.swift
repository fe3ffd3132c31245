import Dispatch
import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// The store's addresses for `FileSender`, kept for a minute as curl keeps its lookups. A lookup
/// runs on a thread of its own, one at a time: `getaddrinfo` cannot be interrupted, so a send
/// that has no address yet waits for it in slices, at most until its connect deadline (which
/// covers name resolution, as curl's connect timeout does) and no longer than its task stays
/// uncancelled. A resolver that hangs holds one lookup thread, not one per send; a failed
/// lookup is not kept (the next send asks again).
final class StoreAddresses: Sendable {
    /// One address to connect to.
    struct Address: Sendable {
        var family: Int32
        var storage: sockaddr_storage
        var length: socklen_t
    }

    /// How long a lookup's answer is used before the next (curl's DNS cache keeps entries 60 s).
    let keepSeconds: Double

    private let host: String
    private let port: Int
    private let lookUp: @Sendable (String, Int) -> [Address]?
    private let state = Mutex(State())

    private struct State {
        var addresses: [Address] = []
        var until = 0.0
        var lookup: Lookup?
    }

    /// A lookup under way, and the group its waiters wait on.
    private final class Lookup: Sendable {
        let done = DispatchGroup()
        let result = Mutex<[Address]?>(nil)
        init() { done.enter() }
    }

    /// `lookUp` is `getaddrinfo` but in tests (nil: the host has no address).
    init(
        host: String, port: Int, lookUp: @escaping @Sendable (String, Int) -> [Address]? = StoreAddresses.getaddrinfo,
        keepSeconds: Double = 60
    ) {
        self.host = host
        self.port = port
        self.lookUp = lookUp
        self.keepSeconds = keepSeconds
    }

    /// The addresses, from the last minute's lookup or a new one. Past the minute, while the
    /// new lookup runs, the old answer is still used (a resolver that hangs then costs nothing
    /// until no old address answers). Throws `ConnectFailed` when the host has no address,
    /// `Timeout` when `deadline` (`FileExchange.seconds()`) passes first (curl's codes for the
    /// same), `Cancelled` within a tenth of a second of `isCancelled` turning true.
    func addresses(by deadline: Double, isCancelled: () -> Bool) throws(S3Error) -> [Address] {
        let now = FileExchange.seconds()
        let (kept, lookup, starts) = state.withLock { s -> ([Address], Lookup?, Bool) in
            if !s.addresses.isEmpty && now < s.until { return (s.addresses, nil, false) }
            if let running = s.lookup { return (s.addresses, running, false) }
            let started = Lookup()
            s.lookup = started
            return (s.addresses, started, true)
        }
        if starts, let lookup { start(lookup) }
        guard let lookup, kept.isEmpty else { return kept }
        while true {
            if isCancelled() { throw S3Error.cancelled }
            let left = deadline - FileExchange.seconds()
            if lookup.done.wait(timeout: .now() + max(0, min(0.1, left))) == .success { break }
            guard left > 0.1 else {
                throw S3Error(
                    kind: .transport, status: 0, code: "Timeout", message: "the store's host was not resolved within the connect timeout")
            }
        }
        guard let found = lookup.result.withLock({ $0 }) else {
            throw S3Error(kind: .transport, status: 0, code: "ConnectFailed", message: "cannot resolve the store's host")
        }
        return found
    }

    private func start(_ lookup: Lookup) {
        let (host, port, lookUp) = (host, port, lookUp)
        // A thread of its own, not a global queue's: those are as wide as the cores, and a
        // resolver that hangs would hold one of them (in the tests it starved the lookup itself).
        Thread.detachNewThread { [self] in
            let found = lookUp(host, port).flatMap { $0.isEmpty ? nil : $0 }
            lookup.result.withLock { $0 = found }
            state.withLock { s in
                if let found {
                    s.addresses = found
                    s.until = FileExchange.seconds() + keepSeconds
                }
                s.lookup = nil
            }
            lookup.done.leave()
        }
    }

    /// Drops the kept answer: its addresses refused or could not be reached (the store may have
    /// moved), so the next send waits for a new lookup.
    func forget() {
        state.withLock { s in
            s.addresses = []
            s.until = 0
        }
    }

    /// The system's lookup: every stream address of `host`, in its order.
    static let getaddrinfo: @Sendable (String, Int) -> [Address]? = { host, port in
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        hints.ai_family = AF_UNSPEC
        var list: UnsafeMutablePointer<addrinfo>?
        guard Glibc.getaddrinfo(host, String(port), &hints, &list) == 0, let list else { return nil }
        defer { freeaddrinfo(list) }
        var found: [Address] = []
        var next: UnsafeMutablePointer<addrinfo>? = list
        while let entry = next {
            next = entry.pointee.ai_next
            guard let from = entry.pointee.ai_addr, Int(entry.pointee.ai_addrlen) <= MemoryLayout<sockaddr_storage>.size else { continue }
            var address = Address(family: entry.pointee.ai_family, storage: sockaddr_storage(), length: entry.pointee.ai_addrlen)
            withUnsafeMutableBytes(of: &address.storage) { to in
                to.copyMemory(from: UnsafeRawBufferPointer(start: from, count: Int(entry.pointee.ai_addrlen)))
            }
            found.append(address)
        }
        return found
    }
}

import Synchronization
import TestSupport
import Testing

@testable import TransferEngine

/// Word of changes that never comes: a wait ends only when its task is cancelled, as a real
/// listener's does.
private struct SilentSignals: JobSignals {
    func changed(_ id: String) async {
        while !Task.isCancelled { await Task.yield() }
    }
}

/// Word of changes that comes when a test says so.
private final class SignalsByHand: JobSignals {
    let announced = Atomic<Int>(0)
    func changed(_ id: String) async {
        let seen = announced.load(ordering: .acquiring)
        while !Task.isCancelled && announced.load(ordering: .acquiring) == seen { await Task.yield() }
    }
    func announce() { announced.add(1, ordering: .releasing) }
}

private struct Boom: Error {}

private final class Renewals: Sendable {
    let count = Atomic<Int>(0)
    var seen: Int { count.load(ordering: .relaxed) }
}

@Suite struct LeaseLifetimeTests {
    /// A bench whose store counts its renewals.
    private func counting(_ renewals: Renewals) -> Bench {
        Bench(beforeWrite: { what in if what == "renew" { renewals.count.add(1, ordering: .relaxed) } })
    }

    private func claimed(_ bench: Bench) async throws -> Lease {
        try await bench.insert(.copy, source: .object(ObjectSource(key: "src")))
        return try #require(try await bench.store.claim(owner: "i", leaseMilliseconds: 30_000)).1
    }

    /// Work that fails ends the lifetime at once: the renewals stop with it (they once went on
    /// renewing in a loop, their waits cut short by the cancellation, and the request never
    /// answered).
    @Test(.timeLimit(.minutes(1))) func aFailingWorkEndsTheLifetimeWithSignals() async throws {
        let renewals = Renewals()
        let bench = counting(renewals)
        let lease = try await claimed(bench)
        let lifetime = LeaseLifetime<Int>(
            store: bench.store, clock: bench.clock, tickMilliseconds: 500,
            leaseMilliseconds: 30_000, signals: SilentSignals())
        await #expect(throws: Boom.self) {
            _ = try await lifetime.run(lease, deadline: nil) { () async throws -> Int in throw Boom() }
        }
        #expect(renewals.seen <= 1)
    }

    /// With word of changes, the lease is renewed every third of it, and an announced pause ends
    /// the work without waiting for a renewal.
    @Test(.timeLimit(.minutes(1))) func anAnnouncedPauseEndsTheWorkBeforeTheNextRenewal() async throws {
        let renewals = Renewals()
        let bench = counting(renewals)
        let lease = try await claimed(bench)
        let signals = SignalsByHand()
        let lifetime = LeaseLifetime<Int>(
            store: bench.store, clock: bench.clock, tickMilliseconds: 500,
            leaseMilliseconds: 30_000, signals: signals)
        let store = bench.store, clock = bench.clock
        let ending = try await driving(clock) {
            try await lifetime.run(lease, deadline: nil) {
                try await clock.sleep(milliseconds: 25_000)
                _ = try await store.transition(id: lease.jobID, .pause)
                signals.announce()
                try await clock.sleep(milliseconds: 60_000)
                return 1
            }
        }
        guard case .leaseLost = ending else { Issue.record("\(ending)"); return }
        #expect(renewals.seen == 2, "renewed at 10 s and 20 s, not every tick")
    }

    /// Progress inside a part is carried on renewals: at least once a second while it moves,
    /// never while it stands still (between the renewals a lease needs anyway).
    @Test(.timeLimit(.minutes(1))) func progressRidesOnRenewalsOnlyWhileItMoves() async throws {
        let renewals = Renewals()
        let bench = counting(renewals)
        let lease = try await claimed(bench)
        let meter = ProgressMeter()
        let lifetime = LeaseLifetime<Int>(
            store: bench.store, clock: bench.clock, tickMilliseconds: 500,
            leaseMilliseconds: 30_000, signals: SilentSignals(), progress: meter)
        let store = bench.store, clock = bench.clock
        let seen = Mutex<[Int64]>([])
        _ = try await driving(clock) {
            try await lifetime.run(lease, deadline: nil) {
                // 5 s of bytes arriving, 100 KiB every 250 ms, then 4 s of nothing.
                for _ in 0..<20 {
                    try await clock.sleep(milliseconds: 250)
                    meter.add(100 << 10)
                    let shown = try await store.job(id: lease.jobID)?.bytesFlowing ?? 0
                    seen.withLock { if $0.last != shown { $0.append(shown) } }
                }
                try await clock.sleep(milliseconds: 1_500)  // the last figure written
                let whileMoving = renewals.seen
                try await clock.sleep(milliseconds: 2_500)
                #expect(renewals.seen == whileMoving, "nothing moved: no write (the next renewal is due at 10 s)")
                return 1
            }
        }
        let values = seen.withLock { $0 }
        #expect(values.count >= 4, "the figure moved at least once a second: \(values)")
        #expect(renewals.seen <= 6, "one write a second at most while moving: \(renewals.seen)")
        #expect(try await store.job(id: lease.jobID)?.bytesFlowing == 2000 << 10)
    }
}

import Foundation
import Synchronization
import Testing

@testable import S3

/// The sender's lookups: bounded by the connect deadline and by cancellation whatever the
/// resolver does, one at a time, kept for a minute, looked up again after a failure.
@Suite struct StoreAddressesTests {
    /// A resolver that answers loopback once `open` turns true, counting its lookups.
    final class Resolver: Sendable {
        let open = Atomic<Bool>(false)
        let lookups = Atomic<Int>(0)
        let answers = Atomic<Bool>(true)

        var lookUp: @Sendable (String, Int) -> [StoreAddresses.Address]? {
            { [self] host, port in
                lookups.wrappingAdd(1, ordering: .relaxed)
                while !open.load(ordering: .relaxed) { usleep(2_000) }
                return answers.load(ordering: .relaxed) ? StoreAddresses.getaddrinfo("127.0.0.1", port) : nil
            }
        }
    }

    static func now() -> Double { FileExchange.seconds() }

    @Test func theSystemLookupFindsLoopback() throws {
        let found = try #require(StoreAddresses.getaddrinfo("localhost", 80))
        #expect(!found.isEmpty && found.allSatisfy { $0.family == AF_INET || $0.family == AF_INET6 })
        #expect(StoreAddresses.getaddrinfo("no-such-host.invalid", 80) == nil)
    }

    @Test func aHangingResolverCostsTheConnectDeadlineAndOneLookup() throws {
        let resolver = Resolver()
        let addresses = StoreAddresses(host: "store", port: 8333, lookUp: resolver.lookUp)
        for _ in 0..<3 {
            let started = Self.now()
            #expect(throws: S3Error.self) { try addresses.addresses(by: started + 0.3) { false } }
            let took = Self.now() - started
            #expect(took >= 0.29 && took < 2, "waited \(took) s for a 0.3 s deadline")
        }
        #expect(resolver.lookups.load(ordering: .relaxed) == 1, "one lookup under way, however many sends wait")
        do {
            _ = try addresses.addresses(by: Self.now() + 0.2) { false }
            Issue.record("a lookup that has not ended gave addresses")
        } catch {
            #expect(error.code == "Timeout" && error.kind == .transport, "curl's code for a lookup past the connect timeout")
        }
        resolver.open.store(true, ordering: .relaxed)
        let found = try addresses.addresses(by: Self.now() + 10) { false }
        #expect(!found.isEmpty)
        _ = try addresses.addresses(by: Self.now() + 10) { false }
        #expect(resolver.lookups.load(ordering: .relaxed) == 1, "the answer is kept")
        addresses.forget()
        _ = try addresses.addresses(by: Self.now() + 10) { false }
        #expect(resolver.lookups.load(ordering: .relaxed) == 2, "forgotten after its addresses refused")
    }

    /// Past the minute the old answer serves while the new lookup runs: a resolver that hangs
    /// then holds up nothing.
    @Test func anOldAnswerServesWhileTheNextLookupHangs() throws {
        let resolver = Resolver()
        resolver.open.store(true, ordering: .relaxed)
        let addresses = StoreAddresses(host: "store", port: 8333, lookUp: resolver.lookUp, keepSeconds: 0)
        let first = try addresses.addresses(by: Self.now() + 10) { false }
        resolver.open.store(false, ordering: .relaxed)
        let started = Self.now()
        let again = try addresses.addresses(by: Self.now() + 10) { false }
        #expect(Self.now() - started < 1 && again.count == first.count, "the old answer, at once")
        #expect(Self.eventually { resolver.lookups.load(ordering: .relaxed) == 2 }, "and a new lookup under way")
        addresses.forget()
        #expect(throws: S3Error.self) { try addresses.addresses(by: Self.now() + 0.2) { false } }
        resolver.open.store(true, ordering: .relaxed)
    }

    static func eventually(_ condition: () -> Bool) -> Bool {
        let until = now() + 10
        while now() < until {
            if condition() { return true }
            usleep(5_000)
        }
        return condition()
    }

    @Test func aCancelledSendStopsWaitingForTheLookup() {
        let resolver = Resolver()
        let addresses = StoreAddresses(host: "store", port: 8333, lookUp: resolver.lookUp)
        let cancelAt = Self.now() + 0.2
        let started = Self.now()
        do {
            _ = try addresses.addresses(by: started + 30) { Self.now() >= cancelAt }
            Issue.record("a lookup that never ends returned")
        } catch {
            #expect(error.kind == .cancelled)
        }
        #expect(Self.now() - started < 2)
        resolver.open.store(true, ordering: .relaxed)
    }

    @Test func aHostWithoutAddressesFailsAndIsLookedUpAgain() {
        let resolver = Resolver()
        resolver.open.store(true, ordering: .relaxed)
        resolver.answers.store(false, ordering: .relaxed)
        let addresses = StoreAddresses(host: "store", port: 8333, lookUp: resolver.lookUp)
        for _ in 0..<2 {
            do {
                _ = try addresses.addresses(by: Self.now() + 10) { false }
                Issue.record("a host without addresses gave some")
            } catch {
                #expect(error.code == "ConnectFailed")
            }
        }
        #expect(resolver.lookups.load(ordering: .relaxed) == 2, "a failure is not kept")
    }
}

import Foundation
import HTTPServer
import Synchronization
import Testing
import TransferEngine

@testable import Gateway

/// The gateway's own bounds, without a stack: labels from fixed sets, one token, exact media
/// types, a readiness cache, per-identity rates and waits, change tickets.
@Suite struct BoundsTests {
    /// Made-up methods are counted as `OTHER`: 1,000 of them add one series, not 1,000.
    @Test func metricsLabelsComeFromFixedSets() async {
        let responder = makeResponder()
        for n in 0..<1000 { _ = await responder.respond(to: request("M\(n)X", "/nope")) }
        _ = await responder.respond(to: request("GET", "/nope/\(UUID().uuidString)"))
        let scrape = body(await responder.respond(to: request("GET", "/metrics")))
        let series = scrape.split(separator: "\n").filter { $0.hasPrefix("gateway_http_requests_total{") }
        #expect(series.contains { $0.contains("method=\"OTHER\"") && $0.hasSuffix(" 1000") })
        #expect(!scrape.contains("M1X") && !scrape.contains("M999X"))
        #expect(series.count <= 4, "\(series)")
    }

    /// Two `Authorization` headers are refused, whichever is valid.
    @Test func twoAuthorizationHeadersAreRefused() throws {
        let twice = request("GET", "/v1/jobs", headers: [("Authorization", "Bearer a"), ("authorization", "Bearer b")])
        #expect(throws: APIError.self) { _ = try Authenticator.authorization(twice) }
        do {
            _ = try Authenticator.authorization(twice)
        } catch {
            #expect(error.status == 400 && error.code == .duplicateAuthorization)
        }
        #expect(try Authenticator.authorization(request("GET", "/", headers: [("Authorization", "Bearer a")])) == "Bearer a")
    }

    /// The media type is matched exactly: a look-alike is not JSON.
    @Test func lookAlikeMediaTypesAreNotJSON() {
        for other in ["application/jsonx", "application/json-patch+json", "application/jsonp; charset=utf-8", "application/json2"] {
            #expect(!Responses.isJSON(other), "\(other)")
        }
        #expect(Responses.isJSON("application/json ; charset=utf-8"))
    }

    /// However many callers ask at once, the dependencies are asked once a second.
    @Test func readinessIsAskedOnceForManyCallers() async {
        final class Counter: Sendable { let count = Atomic<Int>(0) }
        let asked = Counter()
        struct Counting: DependencyCheck {
            let asked: Counter
            var name: String { "postgres" }
            func check(timeout: Int) async -> String? {
                asked.count.add(1, ordering: .relaxed)
                try? await Task.sleep(for: .milliseconds(50))
                return nil
            }
        }
        // Cached for a minute here: a loaded machine may take more than a second to start 300 tasks.
        let readiness = Readiness(checks: [Counting(asked: asked)], timeout: 1, cacheSeconds: 60)
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<300 { group.addTask { _ = await readiness.run() } }
        }
        #expect(asked.count.load(ordering: .relaxed) == 1)
        _ = await readiness.run()
        #expect(asked.count.load(ordering: .relaxed) == 1, "cached")
    }

    /// A bucket of five seconds' worth, refilled at the rate; buckets of quiet identities go.
    @Test func creationsPerSecondPerIdentity() {
        let clock = Mutex(0.0)
        let rate = CreationRate(perSecond: 2, now: { clock.withLock { $0 } })
        for _ in 0..<10 { #expect(rate.take("alice") == nil) }
        #expect(rate.take("alice") == 1, "the burst is spent: wait a second")
        #expect(rate.take("bob") == nil, "one identity's flood is not another's")
        clock.withLock { $0 += 1 }
        #expect(rate.take("alice") == nil && rate.take("alice") == nil)
        #expect(rate.take("alice") != nil)
    }

    @Test func waitsPerIdentity() {
        let waits = PerIdentityCount(limit: 2)
        #expect(waits.acquire("a") && waits.acquire("a") && !waits.acquire("a") && waits.acquire("b"))
        waits.release("a")
        #expect(waits.acquire("a"))
    }

    /// A change between taking a ticket and waiting on it is not missed; a wait without a
    /// change ends at its timeout or when its task is cancelled.
    @Test func changeTicketsMissNothing() async {
        let changes = JobChanges()
        let early = changes.ticket(for: "j1")
        changes.notify("j1")
        #expect(await changes.wait(early, for: "j1", timeout: .seconds(30)))
        let idle = changes.ticket(for: "j2")
        #expect(!(await changes.wait(idle, for: "j2", timeout: .milliseconds(20))))
        let hungUp = changes.ticket(for: "j3")
        let waiter = Task { await changes.wait(hungUp, for: "j3", timeout: .seconds(60)) }
        waiter.cancel()
        #expect(!(await waiter.value))
        changes.close()
        #expect(await changes.wait(changes.ticket(for: "j4"), for: "j4", timeout: .seconds(60)), "after close nobody waits")
    }
}

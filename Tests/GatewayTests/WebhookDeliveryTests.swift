import Foundation
import Synchronization
import Testing

@testable import Gateway

/// An outbox in memory: the events handed out, and what delivery made of each.
final class MemoryOutbox: WebhookOutbox {
    let pending = Mutex<[WebhookEvent]>([])
    let outcomes = Mutex<[String: String]>([:])
    let retries = Mutex<[Double]>([])

    func claimDue(limit: Int, leaseSeconds: Int) async throws -> [WebhookEvent] {
        pending.withLock { events in
            defer { events = Array(events.dropFirst(limit)) }
            return Array(events.prefix(limit))
        }
    }

    func delivered(_ event: WebhookEvent) async throws { outcomes.withLock { $0[event.id] = "delivered" } }

    func retry(_ event: WebhookEvent, afterSeconds seconds: Double, error: String) async throws {
        outcomes.withLock { $0[event.id] = "retry: \(error)" }
        retries.withLock { $0.append(seconds) }
    }

    func failed(_ event: WebhookEvent, error: String) async throws { outcomes.withLock { $0[event.id] = "failed: \(error)" } }
    func failedCount() async throws -> Int { outcomes.withLock { $0.values.filter { $0.hasPrefix("failed") }.count } }
    func sweepDelivered(olderThanSeconds seconds: Int) async throws {}
}

/// A receiver in memory answering `answer`, keeping what it was sent.
final class MemoryPoster: WebhookPoster {
    let answer: WebhookPostResult
    let sent = Mutex<[(body: [UInt8], headers: [(String, String)])]>([])

    init(answer: WebhookPostResult) { self.answer = answer }

    func post(body: [UInt8], headers: [(String, String)]) async -> WebhookPostResult {
        sent.withLock { $0.append((body, headers)) }
        return answer
    }
}

struct WebhookDeliveryTests {
    static func delivery(_ outbox: MemoryOutbox, _ poster: MemoryPoster, now: Double, metrics: Metrics = Metrics()) -> WebhookDelivery {
        var settings = WebhookDelivery.Settings()
        settings.secret = Array("whsec-0123456789abcdef".utf8)
        return WebhookDelivery(
            outbox: outbox, poster: poster, render: { _ in Array(#"{"id":"j1","state":"completed"}"#.utf8) },
            changes: JobChanges(), settings: settings, now: { now }, logger: Logger(level: .error, sink: MemorySink()),
            metrics: metrics)
    }

    static let event = WebhookEvent(id: "e1", type: "job.completed", subjectID: "j1", attempts: 1, createdAt: 1_700_000_000)

    /// The signature a receiver computes with Python's hmac module for this secret, time and body.
    @Test func theSignatureIsHMACSHA256OfTimeDotBody() {
        let headers = WebhookDelivery.headers(
            body: Array(#"{"id":"e1"}"#.utf8), secret: Array("whsec-0123456789abcdef".utf8),
            time: 1_700_000_000, eventID: "e1")
        let signature = headers.first { $0.0 == "Gateway-Signature" }?.1
        #expect(signature == "t=1700000000,v1=475145d8ab7a55b4e1e67de0f9efad85edf150d83de62d06764a208144a61d0f")
        #expect(headers.contains { $0 == ("Content-Type", "application/json") })
    }

    @Test func theEnvelopeCarriesIdTypeTimeAndTheSubject() throws {
        let body = WebhookDelivery.envelope(Self.event, data: Array(#"{"id":"j1"}"#.utf8))
        let json = try #require(try JSONSerialization.jsonObject(with: Data(body)) as? [String: Any])
        #expect(json["id"] as? String == "e1" && json["type"] as? String == "job.completed")
        #expect(json["createdAt"] as? String == "2023-11-14T22:13:20.000Z")
        #expect((json["data"] as? [String: Any])?["id"] as? String == "j1")
    }

    /// First retry within 10 s, then doubling, never past an hour.
    @Test func retriesBackOffFromTenSecondsToAnHour() {
        let delays = (1...12).map { WebhookDelivery.retryDelay(attempts: $0, first: 10, max: 3600, jitter: 1) }
        #expect(delays.prefix(4) == [10, 20, 40, 80])
        #expect(delays.last == 3600 && delays.allSatisfy { $0 <= 3600 })
        #expect(WebhookDelivery.retryDelay(attempts: 1, first: 10, max: 3600, jitter: 0.5) == 5)
        #expect(WebhookDelivery.retryDelay(attempts: 10_000, first: 10, max: 3600, jitter: 1) == 3600)
    }

    @Test func aTwoHundredSettlesAnEvent() async {
        let outbox = MemoryOutbox(), poster = MemoryPoster(answer: .answered(status: 204))
        await Self.delivery(outbox, poster, now: Self.event.createdAt + 1).deliver(Self.event)
        #expect(outbox.outcomes.withLock { $0["e1"] } == "delivered")
        #expect(poster.sent.withLock { $0.count } == 1)
    }

    @Test func aRefusalIsTriedAgainWithinTenSeconds() async {
        let outbox = MemoryOutbox(), poster = MemoryPoster(answer: .answered(status: 500))
        await Self.delivery(outbox, poster, now: Self.event.createdAt + 1).deliver(Self.event)
        #expect(outbox.outcomes.withLock { $0["e1"] } == "retry: HTTP 500")
        let delay = outbox.retries.withLock { $0.first } ?? -1
        #expect(delay >= 5 && delay <= 10)
    }

    /// A day after the change, a failure is the last: the event is kept as failed and counted.
    @Test func afterADayAnEventIsGivenUpAndCounted() async {
        let outbox = MemoryOutbox(), poster = MemoryPoster(answer: .unreachable("ConnectFailed"))
        let metrics = Metrics()
        await Self.delivery(outbox, poster, now: Self.event.createdAt + 86_401, metrics: metrics).deliver(Self.event)
        #expect(outbox.outcomes.withLock { $0["e1"] } == "failed: ConnectFailed")
        #expect(metrics.render().contains("gateway_webhook_deliveries_total{result=\"failed\"} 1"))
    }

    /// An event whose subject is gone cannot be sent; it is not retried for a day.
    @Test func anEventWithoutItsSubjectFails() async {
        let outbox = MemoryOutbox(), poster = MemoryPoster(answer: .answered(status: 200))
        var settings = WebhookDelivery.Settings()
        settings.secret = [1]
        let delivery = WebhookDelivery(
            outbox: outbox, poster: poster, render: { _ in nil }, changes: JobChanges(), settings: settings,
            now: { 0 }, logger: Logger(level: .error, sink: MemorySink()), metrics: Metrics())
        await delivery.deliver(Self.event)
        #expect(outbox.outcomes.withLock { $0["e1"] }?.hasPrefix("failed") == true)
        #expect(poster.sent.withLock { $0.isEmpty })
    }
}

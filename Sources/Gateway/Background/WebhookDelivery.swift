import Crypto
import Synchronization

/// Delivers the outbox's events to the operator's receiver (`GATEWAY_WEBHOOK_URL`), on every
/// instance that has one: each event is POSTed as `{id, type, createdAt, data}` with
/// `Gateway-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256 of "t.body">`; any 2xx settles it;
/// anything else (or no answer within 30 s) is tried again within 10 s, then about twice as
/// long each time up to an hour (with jitter, so a receiver coming back is not met by every
/// event at once), for 24 hours from the change, then kept as failed. Woken by the same notification the long polls hear, so an event
/// leaves within milliseconds of its change; it looks again every few seconds for retries
/// falling due.
public final class WebhookDelivery: Sendable {
    public struct Settings: Sendable {
        public var secret: [UInt8] = []
        /// Events claimed and sent at once.
        public var batch = 16
        /// While an instance sends an event, no other claims it: twice what a POST may take.
        public var leaseSeconds = 60
        public var giveUpAfterSeconds: Double = 86_400
        public var firstRetrySeconds: Double = 10
        public var maxRetrySeconds: Double = 3_600
        /// With nothing heard, the outbox is read again this often (retries falling due).
        public var idleSeconds: Double = 2
        /// Delivered events are kept this long, then dropped.
        public var keepDeliveredSeconds = 86_400

        public init() {}
    }

    /// The key on `JobChanges` that the outbox's notification (`NOTIFY gateway_jobs, 'webhook'`) fires.
    public static let wakeKey = "webhook"

    let outbox: any WebhookOutbox
    let poster: any WebhookPoster
    let render: @Sendable (WebhookEvent) async throws -> [UInt8]?
    let changes: JobChanges
    let settings: Settings
    let now: @Sendable () -> Double
    let logger: Logger
    let metrics: Metrics
    private let stopping = Atomic<Bool>(false)
    private let running = Atomic<Bool>(false)
    private let failedKept = Atomic<Int>(0)
    /// When a failed delivery was last logged (seconds): at most one line a minute says so.
    private let failureLogged = Atomic<Int>(0)

    /// `render` answers the event's `data` (the job's or the upload's JSON), nil when its subject is gone.
    public init(
        outbox: any WebhookOutbox, poster: any WebhookPoster, render: @escaping @Sendable (WebhookEvent) async throws -> [UInt8]?,
        changes: JobChanges, settings: Settings, now: @escaping @Sendable () -> Double, logger: Logger, metrics: Metrics
    ) {
        self.outbox = outbox
        self.poster = poster
        self.render = render
        self.changes = changes
        self.settings = settings
        self.now = now
        self.logger = logger
        self.metrics = metrics
        metrics.registerGauge(
            name: "gateway_webhook_events_failed", help: "Webhook events given up after 24 hours of retries, kept in the outbox."
        ) {
            [weak self] in self?.failedKept.load(ordering: .relaxed) ?? 0
        }
    }

    /// Runs until `stop`.
    public func run() async {
        running.store(true, ordering: .releasing)
        defer { running.store(false, ordering: .releasing) }
        var lastHousekeeping = -Double.infinity
        while !stopping.load(ordering: .acquiring) {
            if now() - lastHousekeeping >= 60 {
                lastHousekeeping = now()
                await housekeeping()
            }
            // The ticket first: an event recorded while the outbox is read wakes the wait below.
            let ticket = changes.ticket(for: Self.wakeKey)
            let events: [WebhookEvent]
            do {
                events = try await outbox.claimDue(limit: settings.batch, leaseSeconds: settings.leaseSeconds)
            } catch {
                logger.warn("webhook outbox unavailable", ["error": .string("\(error)")])
                events = []
            }
            if events.isEmpty {
                _ = await changes.wait(ticket, for: Self.wakeKey, timeout: .milliseconds(Int(settings.idleSeconds * 1000)))
                continue
            }
            changes.forget(ticket, of: Self.wakeKey)
            await withTaskGroup(of: Void.self) { group in
                for event in events { group.addTask { await self.deliver(event) } }
            }
        }
    }

    /// Ends `run` once the events in hand are settled, waiting for that at most `grace`
    /// seconds (an event cut short is sent again when its lease runs out).
    public func stop(grace: Double = 10) async {
        stopping.store(true, ordering: .releasing)
        changes.notify(Self.wakeKey)
        let deadline = ContinuousClock.now + .milliseconds(Int(grace * 1000))
        while running.load(ordering: .acquiring) && ContinuousClock.now < deadline {
            try? await Task.sleep(for: .milliseconds(20))
        }
    }

    func deliver(_ event: WebhookEvent) async {
        do {
            guard let data = try await render(event) else {
                try await outbox.failed(event, error: "its \(event.isJobEvent ? "job" : "upload") cannot be read")
                return
            }
            let body = Self.envelope(event, data: data)
            let headers = Self.headers(body: body, secret: settings.secret, time: Int(now()), eventID: event.id)
            switch await poster.post(body: body, headers: headers) {
            case .answered(let status) where (200...299).contains(status):
                try await outbox.delivered(event)
                metrics.increment("gateway_webhook_deliveries_total{result=\"delivered\"}")
            case .answered(let status):
                try await settleFailure(event, reason: "HTTP \(status)")
            case .unreachable(let reason):
                try await settleFailure(event, reason: reason)
            }
        } catch {
            // The outbox did not take the outcome: the claim lapses and the event is sent again.
            logger.warn("webhook outcome not recorded", ["event": .string(event.id), "error": .string("\(error)")])
        }
    }

    private func settleFailure(_ event: WebhookEvent, reason: String) async throws {
        let minute = Int(now() / 60)
        if failureLogged.exchange(minute, ordering: .relaxed) != minute {
            // The receiver's URL stays out of the log: it may carry a credential of the receiver's.
            logger.warn(
                "webhook delivery failed", ["event": .string(event.id), "attempts": .int(event.attempts), "error": .string(reason)])
        }
        if now() - event.createdAt >= settings.giveUpAfterSeconds {
            try await outbox.failed(event, error: reason)
            metrics.increment("gateway_webhook_deliveries_total{result=\"failed\"}")
            logger.warn(
                "webhook event given up",
                [
                    "event": .string(event.id), "type": .string(event.type),
                    "attempts": .int(event.attempts), "error": .string(reason),
                ])
            return
        }
        let delay = Self.retryDelay(
            attempts: event.attempts, first: settings.firstRetrySeconds, max: settings.maxRetrySeconds,
            jitter: Double.random(in: 0.5...1))
        try await outbox.retry(event, afterSeconds: delay, error: reason)
        metrics.increment("gateway_webhook_deliveries_total{result=\"retried\"}")
    }

    private func housekeeping() async {
        do {
            try await outbox.sweepDelivered(olderThanSeconds: settings.keepDeliveredSeconds)
            failedKept.store(try await outbox.failedCount(), ordering: .relaxed)
        } catch {
            logger.warn("webhook outbox housekeeping failed", ["error": .string("\(error)")])
        }
    }

    // MARK: the message

    /// Seconds before the next try after `attempts` failed ones: `first`, doubling, at most
    /// `max`, scaled by `jitter` (0.5 to 1).
    static func retryDelay(attempts: Int, first: Double, max: Double, jitter: Double) -> Double {
        let doubled = first * Double(1 << Swift.min(Swift.max(attempts - 1, 0), 20))
        return Swift.min(max, doubled) * jitter
    }

    /// `{id, type, createdAt, data}`.
    static func envelope(_ event: WebhookEvent, data: [UInt8]) -> [UInt8] {
        var text = JSONText()
        text.begin(capacity: data.count + 160)
        text.field("id", .string(event.id))
        text.field("type", .string(event.type))
        text.field("createdAt", .string(Timestamp.rfc3339(milliseconds: Int64((event.createdAt * 1000).rounded()))))
        text.rawField("data", data)
        text.end()
        return text.bytes
    }

    /// The signature covers the time and the body: `v1` is hex HMAC-SHA256 of `"<t>.<body>"`.
    static func headers(body: [UInt8], secret: [UInt8], time: Int, eventID: String) -> [(String, String)] {
        let signature = Digest.hex(Digest.hmacSHA256(key: secret, Array("\(time).".utf8) + body))
        return [
            ("Content-Type", "application/json"), ("User-Agent", "transfer-gateway"),
            ("Gateway-Event-Id", eventID), ("Gateway-Signature", "t=\(time),v1=\(signature)"),
        ]
    }
}

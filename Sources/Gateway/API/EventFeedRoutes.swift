import Crypto
import HTTPServer

/// `GET /v1/events`: one feed of every change to the caller's jobs and client uploads
/// (docs/events.md, openapi.yaml tag `events`). Server-Sent Events by default, each event the
/// webhooks' envelope `{id, type, createdAt, data}` with `id` the identity's sequence number;
/// `Last-Event-ID` (or `?since=`) replays the events after it, then the feed goes on live. With
/// `Accept: application/json`, `{events, cursor}` for polling with `?since=cursor` (and
/// `?wait=N` to hold an empty answer until something happens). Without a position the feed
/// starts now. `GET /v1/events/link` hands out the feed as a signed `eventsUrl` that needs no
/// `Authorization` header (`EventSource`). Woken by the trigger's notification, whichever
/// instance made the change; an identity reads only its own events.
struct EventFeedRoutes: Sendable {
    let context: RouteContext
    let feed: any EventFeed
    let changes: JobChanges
    /// Signs `eventsUrl`s (absent without a link secret: no links).
    let links: DataLinks?

    /// Events per JSON answer unless `limit` says otherwise, and the most it may ask for.
    static let pageDefault = 100
    static let pageMaximum = 1000
    static let knownQuery: Set<String> = ["since", "wait", "limit", "identity", "expires", "signature"]

    init(context: RouteContext, feed: any EventFeed, changes: JobChanges) {
        self.context = context
        self.feed = feed
        self.changes = changes
        links = context.settings.linkSecret.map { DataLinks(secret: $0, now: context.now) }
    }

    func register(in router: inout Router<GatewayRoute>) {
        router.add("GET", "/v1/events") { try await events($0.http) }
        router.add("GET", "/v1/events/link") { try await link($0.http) }
    }

    private func events(_ http: HTTPRequest) async throws -> HTTPResponse {
        let query = try QueryParameters.read(http, known: Self.knownQuery)
        let owner = try reader(http, query: query)
        let latest = try await feed.latest(owner: owner)
        let position = try Self.position(lastEventID: http.headers["last-event-id"], since: query["since"], latest: latest)
        if Self.wantsJSON(http.headers["accept"]) {
            let wait = try query["wait"].map { raw throws(APIError) -> Int in
                guard let seconds = DecimalNumber.parse(raw).map(Int.init), (0...60).contains(seconds) else {
                    throw APIError.validation("wait must be from 0 to 60 seconds.")
                }
                return seconds
            }
            let limit = try PageLimit.read(query, fallback: Self.pageDefault, maximum: Self.pageMaximum)
            return try await page(owner: owner, after: position, limit: limit, wait: wait ?? 0, http: http)
        }
        return try await stream(owner: owner, after: position, http: http)
    }

    /// The identity whose feed this is: by a signed link (`identity`, `expires`, `signature`), the
    /// one it was made for; otherwise the caller's token's.
    private func reader(_ http: HTTPRequest, query: [String: String]) throws(APIError) -> String {
        guard query["signature"] != nil || query["expires"] != nil || query["identity"] != nil else {
            let identity = try context.authenticator.identity(of: http)
            guard let owner = identity.id else { throw APIError.unauthorized }
            return owner
        }
        guard let links, let encoded = query["identity"], let bytes = Base64URL.decode(Substring(encoded)), !bytes.isEmpty,
            let owner = String(validating: bytes, as: UTF8.self),
            links.valid(jobID: owner, expires: query["expires"], signature: query["signature"], for: .feed)
        else {
            throw APIError(.forbidden, "The link is not valid or has expired; ask GET /v1/events/link for a fresh one.")
        }
        return owner
    }

    /// Where the feed starts: after `Last-Event-ID` when the client sends one (an `EventSource`
    /// reconnecting to the URL it opened, `since` and all), else after `since`, else now. Each
    /// given must be a number this feed gave (a decimal number no larger than the identity's
    /// newest event), or the answer is 400 `validation_failed`.
    static func position(lastEventID: String?, since: String?, latest: Int64) throws(APIError) -> FeedCursor {
        let fromHeader = try lastEventID.map { text throws(APIError) -> FeedCursor in
            guard let cursor = FeedCursor(text), cursor.sequence <= latest else {
                throw APIError.validation("Last-Event-ID is not an event id this feed gave.")
            }
            return cursor
        }
        let fromQuery = try since.map { text throws(APIError) -> FeedCursor in
            guard let cursor = FeedCursor(text), cursor.sequence <= latest else {
                throw APIError.validation("since is not a cursor this feed gave.")
            }
            return cursor
        }
        return fromHeader ?? fromQuery ?? FeedCursor(latest)
    }

    /// JSON when the client asks for it and not for `text/event-stream`; the stream otherwise.
    static func wantsJSON(_ accept: String?) -> Bool {
        guard let accept = accept?.lowercased() else { return false }
        return accept.contains("application/json") && !accept.contains("text/event-stream")
    }

    /// `{events: [...], cursor}`: the events after `after` (at most `limit`), and where to ask
    /// from next. With `wait`, an answer that would be empty is held until an event comes or
    /// `wait` seconds pass, in one of the identity's wait slots.
    private func page(owner: String, after: FeedCursor, limit: Int, wait: Int, http: HTTPRequest) async throws -> HTTPResponse {
        var found = try await feed.events(owner: owner, after: after.sequence, limit: limit)
        if found.isEmpty && wait > 0 {
            found = try await context.limits.holdingWait(owner) {
                try await nextEvents(owner: owner, after: after, limit: limit, until: ContinuousClock.now + .seconds(wait), http: http)
            }
        }
        var text = JSONText()
        text.begin()
        var list: [UInt8] = [UInt8(ascii: "[")]
        for (index, event) in found.enumerated() {
            if index > 0 { list.append(UInt8(ascii: ",")) }
            list += event.envelope()
        }
        list.append(UInt8(ascii: "]"))
        text.rawField("events", list)
        text.field("cursor", .string(FeedCursor(found.last?.sequence ?? after.sequence).text))
        text.end()
        var response = Responses.json(200, bytes: text.bytes)
        response.headers.add("Cache-Control", "no-store")
        return response
    }

    /// The events after `after` once there are some, or none at `deadline`, at shutdown or when
    /// the client hangs up. The ticket is taken before each read, so an event committed between
    /// the read and the wait has marked it already.
    func nextEvents(
        owner: String, after: FeedCursor, limit: Int, until deadline: ContinuousClock.Instant, http: HTTPRequest
    ) async throws -> [FeedEvent] {
        let key = EventFeedWake.key(owner)
        while !http.serverIsShuttingDown {
            let ticket = changes.ticket(for: key)
            let found = try await feed.events(owner: owner, after: after.sequence, limit: limit)
            let left = deadline - ContinuousClock.now
            if !found.isEmpty || left <= .zero {
                changes.forget(ticket, of: key)
                return found
            }
            // Without the listener (the database was away) notifications may go unheard: look again soon.
            _ = await changes.wait(ticket, for: key, timeout: changes.isLive ? left : min(left, .seconds(2)))
            try Task.checkCancellation()
        }
        return []
    }

    /// `{eventsUrl, expiresAt}`: the caller's feed as a link that needs no header, valid at most
    /// 50 minutes (an `EventSource` that reconnects after that is refused 403; ask again).
    private func link(_ http: HTTPRequest) async throws -> HTTPResponse {
        _ = try QueryParameters.read(http, known: [])
        let identity = try context.authenticator.identity(of: http)
        guard let owner = identity.id else { throw APIError.unauthorized }
        guard let links else { throw APIError(.notImplemented, "Links are not signed here: GATEWAY_LINK_SECRET is not set.") }
        let expires = links.expiry()
        let url =
            "\(JobRoutes.origin(of: http))/v1/events?identity=\(Base64URL.encode(Array(owner.utf8)))&"
            + links.query(jobID: owner, expires: expires, for: .feed)
        var text = JSONText()
        text.begin()
        text.field("eventsUrl", .string(url))
        text.field("expiresAt", .string(Timestamp.rfc3339(milliseconds: Int64(expires) * 1000)))
        text.end()
        var response = Responses.json(200, bytes: text.bytes)
        response.headers.add("Cache-Control", "no-store")
        return response
    }
}

import HTTPServer

/// The feed as Server-Sent Events: `retry: 2000`, then each event as `id: <number>`,
/// `event: <type>`, `data: <envelope>`, a `: keep-alive` comment every 15 seconds with nothing
/// to say, and the end after 30 minutes (an `EventSource` opens it again with `Last-Event-ID`,
/// and a link is checked again then). The stream holds one of the identity's
/// `GATEWAY_USER_MAX_WAITS` slots until it ends or the client hangs up.
extension EventFeedRoutes {
    static let batch = 100

    func stream(owner: String, after start: FeedCursor, http: HTTPRequest) async throws -> HTTPResponse {
        let slot = try await context.limits.admitWait(owner)
        let routes = self
        return EventStreamResponse.make(holding: slot) { writer in
            try await routes.follow(owner: owner, after: start, to: writer, http: http)
        }
    }

    private func follow(owner: String, after start: FeedCursor, to writer: ResponseBodyWriter, http: HTTPRequest) async throws {
        var position = start
        let end = ContinuousClock.now + JobRoutes.longestStream
        while !http.serverIsShuttingDown && ContinuousClock.now < end {
            let found = try await nextEvents(
                owner: owner, after: position, limit: Self.batch, until: min(end, ContinuousClock.now + JobRoutes.heartbeat), http: http)
            if found.isEmpty {
                try await writer.write(Array(": keep-alive\n\n".utf8))
                continue
            }
            var chunk: [UInt8] = []
            for event in found { chunk += Self.sse(event) }
            try await writer.write(chunk)
            position = FeedCursor(found[found.count - 1].sequence)
        }
    }

    /// `id: <number>` `event: <type>` `data: <envelope>`: the JSON has no line breaks, so one data line.
    static func sse(_ event: FeedEvent) -> [UInt8] {
        Array("id: \(event.sequence)\nevent: \(event.type)\ndata: ".utf8) + event.envelope() + Array("\n\n".utf8)
    }
}

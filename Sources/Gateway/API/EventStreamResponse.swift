import HTTPServer

/// The answer both event streams give (`/v1/jobs/{id}/events` and `/v1/events`): Server-Sent
/// Events of no set length, never stored (`no-store`) nor held back by a proxy
/// (`X-Accel-Buffering: no`), opening with `retry: 2000` (an `EventSource` reconnects after two
/// seconds, plenty on a phone). The identity's wait slot is given back when the stream ends,
/// however it ends.
enum EventStreamResponse {
    static func make(holding slot: HeldSlot, _ events: @escaping @Sendable (ResponseBodyWriter) async throws -> Void) -> HTTPResponse {
        let headers = HTTPHeaders([
            ("Content-Type", "text/event-stream; charset=utf-8"), ("Cache-Control", "no-store"),
            ("X-Accel-Buffering", "no"),
        ])
        return HTTPResponse(
            status: 200, headers: headers,
            body: .stream(length: nil) { writer in
                defer { slot.release() }
                try await writer.write(Array("retry: 2000\n\n".utf8))
                try await events(writer)
            })
    }
}

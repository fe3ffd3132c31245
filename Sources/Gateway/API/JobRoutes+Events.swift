import Foundation
import HTTPServer
import Synchronization
import TransferEngine

/// `GET /v1/jobs/{id}/events`: the job as Server-Sent Events. An `event: job` with the job's
/// JSON whenever it changes (its id is the job's ETag value, so `Last-Event-ID` resumes after
/// the last state the client saw, with nothing missed: each event is the whole job), a comment
/// every 15 seconds so proxies keep the connection, and the end after a final state. Woken by
/// the same notification as the long poll, on whichever instance the change happened. Opened
/// with the owner's token, or with the job's `eventsUrl` (signed, no header), since a browser's
/// `EventSource` cannot send one. Each stream holds one of the identity's
/// `GATEWAY_USER_MAX_WAITS` slots until it ends or the client hangs up, and ends after 30
/// minutes in any case (an `EventSource` opens it again with `Last-Event-ID`; a link is checked
/// again then, so a stream never outlives its link by long).
extension JobRoutes {
    static let heartbeat: Duration = .seconds(15)
    static let longestStream: Duration = .seconds(1800)

    func events(_ http: HTTPRequest, id: String) async throws -> HTTPResponse {
        let (job, holder) = try await streamedJob(http, id: id)
        let lastSeen = http.headers["last-event-id"].map { "\"\($0)\"" }
        // A client that saw the final state and reconnects is told to stop (204 ends EventSource).
        if job.state.isFinal && lastSeen == Self.etag(job) {
            return HTTPResponse(status: 204, headers: HTTPHeaders([("Cache-Control", "no-store")]))
        }
        let slot = try await context.limits.admitWait(holder)
        let routes = self
        return EventStreamResponse.make(holding: slot) { writer in
            try await routes.stream(job, after: lastSeen, to: writer, http: http)
        }
    }

    /// The job a stream names, and whose wait slot it takes: by its owner's (or an admin's)
    /// token, the caller's; by a valid `eventsUrl`, the job owner's.
    private func streamedJob(_ http: HTTPRequest, id: String) async throws -> (Job, String) {
        let query = try QueryParameters.read(http)
        guard query["signature"] != nil || query["expires"] != nil else {
            let (job, identity) = try await visibleJob(http, id: id)
            return (job, identity.id ?? job.owner)
        }
        guard let links, UUID(uuidString: id) != nil,
            links.valid(jobID: id.lowercased(), expires: query["expires"], signature: query["signature"], for: .events)
        else {
            throw APIError(.forbidden, "The link is not valid or has expired; ask the job for a fresh eventsUrl.")
        }
        guard let job = try await jobs.store.job(id: id.lowercased()) else { throw APIError.notFound }
        return (job, job.owner)
    }

    private func stream(_ first: Job, after lastSeen: String?, to writer: ResponseBodyWriter, http: HTTPRequest) async throws {
        var job = first
        var sent = lastSeen
        let end = ContinuousClock.now + Self.longestStream
        while true {
            if Self.etag(job) != sent {
                sent = Self.etag(job)
                // Without an eventsUrl: a stream does not hand out fresh links to itself.
                try await writer.write(Self.event(job, json: json(job, http, eventsLink: false)))
            }
            if job.state.isFinal || http.serverIsShuttingDown || ContinuousClock.now >= end { return }
            let next = try await waitForChange(
                of: job, from: sent ?? Self.etag(job), until: ContinuousClock.now + Self.heartbeat, http: http)
            if Self.etag(next) == sent && !next.state.isFinal {
                try await writer.write(Array(": keep-alive\n\n".utf8))
            }
            job = next
        }
    }

    /// `id: <version>` `event: job` `data: <json>`: the JSON has no line breaks, so one data line.
    static func event(_ job: Job, json: [UInt8]) -> [UInt8] {
        Array("id: \(job.version)\nevent: job\ndata: ".utf8) + json + Array("\n\n".utf8)
    }
}

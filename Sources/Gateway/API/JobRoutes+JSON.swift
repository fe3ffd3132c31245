import Foundation
import HTTPServer
import TransferEngine

/// A job as the API shows it: its JSON (with the links to its data and events), its ETag.
extension JobRoutes {
    /// The job's ETag: its version, quoted (a changed job has another).
    static func etag(_ job: Job) -> String { "\"\(job.version)\"" }

    /// The job's JSON, with a fresh `dataUrl` when it is a completed download and a fresh
    /// `eventsUrl` while it has not ended: absolute URLs on the gateway as the client reached it
    /// (its `Host`).
    func json(_ job: Job, _ http: HTTPRequest, eventsLink: Bool = true) -> [UInt8] {
        guard let links else { return Self.json(job) }
        let base = "\(Self.origin(of: http))/v1/jobs/\(job.id)/"
        let data = job.kind == .download && job.state == .completed ? base + "data?" + links.query(jobID: job.id) : nil
        let events = job.state.isFinal || !eventsLink ? nil : base + "events?" + links.query(jobID: job.id, for: .events)
        return Self.json(job, dataURL: data, eventsURL: events)
    }

    /// `scheme://host` of the gateway as the client reached it (its `Host`; `https` when a
    /// trusted proxy says so), for the links written into answers.
    static func origin(of http: HTTPRequest) -> String {
        let host = http.headers["host"].flatMap { DataLinks.plausibleHost($0) ? $0 : nil } ?? "localhost"
        let scheme = http.headers["x-forwarded-proto"] == "https" && http.clientAddress != http.remoteAddress ? "https" : "http"
        return "\(scheme)://\(host)"
    }

    static func json(_ job: Job, dataURL: String? = nil, eventsURL: String? = nil) -> [UInt8] {
        var text = JSONText()
        text.begin()
        text.field("id", .string(job.id))
        text.field("type", .string(job.kind.rawValue))
        text.field("state", .string(job.state.rawValue))
        optional(&text, "objectKey", job.objectKey.map { .string($0) })
        optional(&text, "bytesTotal", job.bytesTotal.map { .int(Int($0)) })
        text.field("bytesTransferred", .int(Int(job.progressShown)))
        text.field("bytesCommitted", .int(Int(job.bytesCommitted)))
        optional(&text, "partsTotal", job.partsTotal.map { .int($0) })
        text.field("partsCompleted", .int(job.partsCompleted))
        text.field("partSize", .int(Int(job.partSize)))
        let fraction: Double
        if job.state == .completed {
            fraction = 1
        } else if let total = job.bytesTotal, total > 0 {
            fraction = min(1, Double(job.bytesCommitted) / Double(total))
        } else {
            fraction = 0
        }
        text.field("fractionCompleted", .double((fraction * 10_000).rounded() / 10_000))
        text.field("attempts", .int(job.attempts))
        optional(&text, "retryAt", job.retryAt.map { .string(Timestamp.rfc3339(milliseconds: $0)) })
        text.rawField("lastError", job.lastError.map(errorJSON) ?? Array("null".utf8))
        text.rawField("error", job.error.map(errorJSON) ?? Array("null".utf8))
        text.field("createdAt", .string(Timestamp.rfc3339(milliseconds: job.createdAt)))
        text.field("updatedAt", .string(Timestamp.rfc3339(milliseconds: job.updatedAt)))
        optional(&text, "completedAt", job.completedAt.map { .string(Timestamp.rfc3339(milliseconds: $0)) })
        optional(&text, "etag", job.etag.map { .string($0) })
        text.rawField("checksum", ChecksumFields.json(job.checksum))
        if let dataURL { text.field("dataUrl", .string(dataURL)) }
        if let eventsURL { text.field("eventsUrl", .string(eventsURL)) }
        text.end()
        return text.bytes
    }

    private static func optional(_ text: inout JSONText, _ key: String, _ value: LogValue?) {
        if let value { text.field(key, value) } else { text.rawField(key, Array("null".utf8)) }
    }
}

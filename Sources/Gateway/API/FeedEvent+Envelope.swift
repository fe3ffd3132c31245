import TransferEngine

extension FeedEvent {
    /// `{id, type, createdAt, data}`, the webhooks' envelope, with `id` the event's number in
    /// its identity's sequence (as a string) and `data` the job as `GET /v1/jobs/{id}` shows it,
    /// or the client upload as `GET /v1/uploads/{id}` does (without the parts S3 holds), as the
    /// change left it. No links: they would be stale by the time an event is replayed.
    func envelope() -> [UInt8] {
        let data: [UInt8]
        switch subject {
        case .job(let job):
            data = JobRoutes.json(job)
        case .upload(let record):
            if let plan = try? PartPlan(objectSize: record.size, requestedPartSize: record.partSize) {
                data = UploadsRoutes.json(record, plan: plan, held: [])
            } else {
                data = Array("null".utf8)
            }
        }
        var text = JSONText()
        text.begin(capacity: data.count + 120)
        text.field("id", .string(String(sequence)))
        text.field("type", .string(type))
        text.field("createdAt", .string(Timestamp.rfc3339(milliseconds: createdAt)))
        text.rawField("data", data)
        text.end()
        return text.bytes
    }
}

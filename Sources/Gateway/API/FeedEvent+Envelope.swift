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
        case .object(let change):
            data = change.json()
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

extension ObjectChange {
    /// `object.deleted`: the place (`accessLevel`, `key`, `identityId`, `objectKey`);
    /// `object.moved`: `{source, destination, size, etag}`, as a move is asked and answered.
    func json() -> [UInt8] {
        guard let destination else { return Self.json(source) }
        var text = JSONText()
        text.begin()
        text.rawField("source", Self.json(source))
        text.rawField("destination", Self.json(destination))
        if let size { text.field("size", .int(Int(size))) }
        if let etag { text.field("etag", .string(etag)) }
        text.end()
        return text.bytes
    }

    private static func json(_ place: Place) -> [UInt8] {
        var text = JSONText()
        text.begin()
        text.field("accessLevel", .string(place.accessLevel))
        text.field("key", .string(place.key))
        if let identityId = place.identityId { text.field("identityId", .string(identityId)) }
        text.field("objectKey", .string(place.objectKey))
        text.end()
        return text.bytes
    }
}

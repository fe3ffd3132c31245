import TransferEngine

/// The `data` of a webhook event: the job as `GET /v1/jobs/{id}` shows it (without a
/// `dataUrl`: a link is made for a client, not for a backend), or the upload as
/// `GET /v1/uploads/{id}` does. Final states do not change, so the subject read at delivery
/// is the subject as the change left it.
public enum WebhookEventData {
    public static func renderer(
        jobs: any JobStore, clientUploads: any ClientUploadStore
    ) -> @Sendable (WebhookEvent) async throws -> [UInt8]? {
        { event in
            if event.isJobEvent {
                return try await jobs.job(id: event.subjectID).map { JobRoutes.json($0) }
            }
            guard let record = try await clientUploads.upload(id: event.subjectID),
                let plan = try? PartPlan(objectSize: record.size, requestedPartSize: record.partSize)
            else { return nil }
            return UploadsRoutes.json(record, plan: plan, held: [])
        }
    }
}

/// Word that a job changed, whichever instance changed it (the gateway hears PostgreSQL's
/// `NOTIFY`). With it, a request streaming an upload renews its lease only every third of the
/// lease and still sees a pause or cancel at once: thousands of slow uploads do not mean
/// thousands of renewals a second.
public protocol JobSignals: Sendable {
    /// Returns once job `id` may have changed since the call began; ends early when the waiting
    /// task is cancelled.
    func changed(_ id: String) async
}

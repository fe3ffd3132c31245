/// Word that a job changed, whichever instance changed it (the gateway hears PostgreSQL's
/// `NOTIFY`). With it, a request streaming an upload renews its lease only every third of the
/// lease and still sees a pause or cancel at once (thousands of slow uploads do not mean
/// thousands of renewals a second), and a worker with a free slot claims a job queued
/// anywhere at once (`JobWorker.queuedSignal`).
public protocol JobSignals: Sendable {
    /// Returns once what `key` names may have changed since the call began: a job's id, or a
    /// named signal such as `JobWorker.queuedSignal`; ends early when the waiting task is
    /// cancelled.
    func changed(_ key: String) async
}

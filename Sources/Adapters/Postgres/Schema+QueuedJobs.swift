import Postgres

extension Schema {
    /// Migration 18: a job that is queued (created, resumed, retried, or sent to wait out an
    /// outage) is announced as `NOTIFY gateway_jobs, 'queued'`, so every instance's worker with
    /// a free slot claims at once instead of at its next poll (a job handed back by releasing its
    /// lease stays `running` and is found by the poll). One
    /// payload for every job (`JobWorker.queuedSignal`): PostgreSQL folds the same notification
    /// within a transaction.
    static let queuedJobs = Migrations.Migration(
        version: 18, name: "queued jobs announced",
        statements: [
            """
            CREATE FUNCTION gateway_job_queued() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN
                PERFORM pg_notify('gateway_jobs', 'queued');
                RETURN NEW;
            END
            $$
            """,
            """
            CREATE TRIGGER jobs_queued AFTER INSERT OR UPDATE OF state ON jobs FOR EACH ROW
            WHEN (NEW.state = 'queued') EXECUTE FUNCTION gateway_job_queued()
            """,
        ])
}

import Postgres

extension Schema {
    /// Migration 14: the event feed (`GET /v1/events`). Every change to an identity's jobs and
    /// client uploads is written by a trigger in the transaction of the change (always, unlike
    /// the webhook outbox), numbered by a counter row per identity: the `UPDATE` of that row
    /// holds its lock to the commit, so an identity's events commit in the order of their
    /// numbers and a reader that has seen number N never finds a smaller one appear later. The
    /// numbers have no gaps (a rolled-back change takes its number back with it). Each event
    /// keeps the row as the change left it (`snapshot`, read back with `jsonb_populate_record`).
    /// A `job.progress` (bytes, parts or a state with no event of its own) is written at most
    /// once a second per job, through its mark in `feed_progress`, and never after the job ended
    /// (the janitor's later bookkeeping on an ended job tells nothing). `NOTIFY gateway_jobs,
    /// 'events:<md5 of the identity>'` wakes the feeds of that identity on every instance.
    static let eventFeed = Migrations.Migration(
        version: 14, name: "event feed",
        statements: [
            "CREATE TABLE feed_sequences (owner text PRIMARY KEY, seq bigint NOT NULL)",
            """
            CREATE TABLE feed_events (
                owner text NOT NULL,
                seq bigint NOT NULL,
                type text NOT NULL,
                subject_id uuid NOT NULL,
                snapshot jsonb NOT NULL,
                created_at timestamptz NOT NULL DEFAULT clock_timestamp(),
                PRIMARY KEY (owner, seq)
            )
            """,
            "CREATE INDEX feed_events_by_age ON feed_events (created_at)",
            // No index on `at`: a mark moves with every progress event, in place (HOT); the
            // janitor's daily sweep reads the table whole, one small row per job of the day.
            "CREATE TABLE feed_progress (subject_id uuid PRIMARY KEY, at timestamptz NOT NULL)",
            """
            CREATE FUNCTION gateway_feed_record(who text, kind text, subject uuid, snapshot jsonb) RETURNS void
            LANGUAGE plpgsql AS $$
            DECLARE
                n bigint;
            BEGIN
                INSERT INTO feed_sequences AS s (owner, seq) VALUES (who, 1)
                    ON CONFLICT (owner) DO UPDATE SET seq = s.seq + 1
                    RETURNING s.seq INTO n;
                INSERT INTO feed_events (owner, seq, type, subject_id, snapshot) VALUES (who, n, kind, subject, snapshot);
                PERFORM pg_notify('gateway_jobs', 'events:' || md5(who));
            END
            $$
            """,
            """
            CREATE FUNCTION gateway_feed_event() RETURNS trigger LANGUAGE plpgsql AS $$
            DECLARE
                kinds text[] := '{}';
                kind text;
                marked boolean;
            BEGIN
                IF TG_TABLE_NAME = 'jobs' THEN
                    IF TG_OP = 'INSERT' THEN
                        kinds := ARRAY['job.created'];
                        IF NEW.state IN ('completed', 'failed', 'canceled') THEN
                            kinds := kinds || ('job.' || NEW.state);
                        END IF;
                    ELSIF OLD.state IS DISTINCT FROM NEW.state AND NEW.state IN ('paused', 'completed', 'failed', 'canceled') THEN
                        kinds := ARRAY['job.' || NEW.state];
                    ELSIF OLD.state IS DISTINCT FROM NEW.state AND OLD.state IN ('paused', 'failed') THEN
                        kinds := ARRAY['job.resumed'];
                    ELSIF NEW.state NOT IN ('completed', 'failed', 'canceled') THEN
                        INSERT INTO feed_progress AS p (subject_id, at) VALUES (NEW.id, clock_timestamp())
                            ON CONFLICT (subject_id) DO UPDATE SET at = EXCLUDED.at
                            WHERE p.at <= EXCLUDED.at - interval '1 second'
                            RETURNING true INTO marked;
                        IF marked THEN
                            kinds := ARRAY['job.progress'];
                        END IF;
                    END IF;
                ELSIF NEW.state = 'open' AND (TG_OP = 'INSERT' OR OLD.state = 'creating') THEN
                    kinds := ARRAY['upload.created'];
                ELSIF NEW.state = 'completed' AND (TG_OP = 'INSERT' OR OLD.state <> 'completed') THEN
                    kinds := ARRAY['upload.completed'];
                ELSIF NEW.state = 'aborted' AND (TG_OP = 'INSERT' OR OLD.state <> 'aborted') THEN
                    kinds := ARRAY['upload.canceled'];
                END IF;
                FOREACH kind IN ARRAY kinds LOOP
                    PERFORM gateway_feed_record(NEW.owner, kind, NEW.id, to_jsonb(NEW));
                END LOOP;
                RETURN NEW;
            END
            $$
            """,
            "CREATE TRIGGER jobs_feed_created AFTER INSERT ON jobs FOR EACH ROW EXECUTE FUNCTION gateway_feed_event()",
            """
            CREATE TRIGGER jobs_feed_changed AFTER UPDATE ON jobs FOR EACH ROW
            WHEN (OLD.version IS DISTINCT FROM NEW.version) EXECUTE FUNCTION gateway_feed_event()
            """,
            "CREATE TRIGGER uploads_feed AFTER INSERT OR UPDATE OF state ON uploads FOR EACH ROW EXECUTE FUNCTION gateway_feed_event()",
        ])
}

import Postgres

/// The gateway's PostgreSQL schema, as versioned migrations (applied by `transfer-gateway
/// migrate` and at `serve` start; see `Migrations`). Never edit a shipped migration: add one.
public enum Schema {
    public static let migrations = Migrations([
        .init(
            version: 1, name: "jobs and their parts",
            statements: [
                """
                CREATE TABLE jobs (
                    id uuid PRIMARY KEY,
                    owner text NOT NULL,
                    type text NOT NULL CHECK (type IN ('upload', 'import', 'copy', 'download')),
                    state text NOT NULL CHECK (state IN ('pending', 'queued', 'running', 'paused', 'completed', 'failed', 'canceled')),
                    object_key text,
                    source jsonb,
                    options jsonb NOT NULL DEFAULT '{}',
                    bytes_total bigint,
                    bytes_transferred bigint NOT NULL DEFAULT 0,
                    bytes_committed bigint NOT NULL DEFAULT 0,
                    part_size bigint NOT NULL,
                    parts_total integer,
                    upload_id text,
                    etag text,
                    error jsonb,
                    attempts integer NOT NULL DEFAULT 0,
                    lease_owner text,
                    lease_token bigint NOT NULL DEFAULT 0,
                    lease_expires_at timestamptz,
                    version bigint NOT NULL DEFAULT 1,
                    created_at timestamptz NOT NULL DEFAULT now(),
                    updated_at timestamptz NOT NULL DEFAULT now(),
                    completed_at timestamptz
                )
                """,
                "CREATE INDEX jobs_by_owner ON jobs (owner, created_at DESC, id DESC)",
                "CREATE INDEX jobs_claimable ON jobs (lease_expires_at) WHERE state IN ('queued', 'running')",
                """
                CREATE TABLE job_parts (
                    job_id uuid NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
                    part_number integer NOT NULL CHECK (part_number BETWEEN 1 AND 10000),
                    size bigint NOT NULL,
                    etag text NOT NULL,
                    attempts integer NOT NULL DEFAULT 1,
                    completed_at timestamptz NOT NULL DEFAULT now(),
                    PRIMARY KEY (job_id, part_number)
                )
                """,
            ]),
        .init(
            version: 2, name: "upload tails",
            statements: [
                // The bytes of an upload past its last full part, so any instance takes the next request.
                "ALTER TABLE jobs ADD COLUMN upload_tail bytea"
            ]),
        .init(
            version: 3, name: "client-driven multipart uploads",
            statements: [
                """
                CREATE TABLE uploads (
                    id uuid PRIMARY KEY,
                    owner text NOT NULL,
                    object_key text NOT NULL,
                    s3_upload_id text NOT NULL,
                    size bigint NOT NULL,
                    part_size bigint NOT NULL,
                    part_count integer NOT NULL,
                    state text NOT NULL CHECK (state IN ('open', 'completed', 'aborted')),
                    etag text,
                    created_at timestamptz NOT NULL DEFAULT now(),
                    completed_at timestamptz
                )
                """
            ]),
        .init(
            version: 4, name: "bounded uploads, crash counts, change notifications",
            statements: [
                // Times a job's holder died with it: a poison job stops at `crash_loop`.
                "ALTER TABLE jobs ADD COLUMN crashes integer NOT NULL DEFAULT 0",
                // The source's ETag when the plan was made: a changed source is `source_changed`.
                "ALTER TABLE jobs ADD COLUMN source_etag text",
                // An upload's bytes past its last part, as staged objects (TailSegment JSON), not bytea.
                "ALTER TABLE jobs ADD COLUMN upload_tail_segments jsonb NOT NULL DEFAULT '[]'",
                // When an upload job last received bytes: the janitor's idle rule counts from here.
                "ALTER TABLE jobs ADD COLUMN bytes_at timestamptz",
                // Tails kept as bytea before: the client sends those bytes again (from the last part).
                "UPDATE jobs SET bytes_committed = bytes_transferred, version = version + 1 WHERE upload_tail IS NOT NULL",
                "ALTER TABLE jobs DROP COLUMN upload_tail",
                "CREATE INDEX jobs_active_by_owner ON jobs (owner, type) WHERE state IN ('pending', 'queued', 'running', 'paused')",
                // Every change of a job (its version moves) is announced to every instance's listener.
                """
                CREATE FUNCTION gateway_job_changed() RETURNS trigger LANGUAGE plpgsql AS $$
                BEGIN
                    PERFORM pg_notify('gateway_jobs', NEW.id::text);
                    RETURN NEW;
                END
                $$
                """,
                """
                CREATE TRIGGER jobs_changed AFTER UPDATE ON jobs FOR EACH ROW
                WHEN (OLD.version IS DISTINCT FROM NEW.version) EXECUTE FUNCTION gateway_job_changed()
                """,
                // Client-driven uploads are recorded before S3 is asked (`creating`), so a crash in
                // between leaves a record the janitor can act on, never an unknown upload.
                "ALTER TABLE uploads DROP CONSTRAINT uploads_state_check",
                "ALTER TABLE uploads ADD CONSTRAINT uploads_state_check CHECK (state IN ('creating', 'open', 'completed', 'aborted'))",
                "ALTER TABLE uploads ALTER COLUMN s3_upload_id DROP NOT NULL",
                "ALTER TABLE uploads ADD COLUMN touched_at timestamptz",
                "CREATE INDEX uploads_open_by_owner ON uploads (owner) WHERE state IN ('creating', 'open')",
            ]),
        .init(
            version: 5, name: "lease renewals as heap-only updates",
            statements: [
                // A renewal changes only lease_expires_at: with no index on it, and room left in each
                // page, PostgreSQL updates the row in place (HOT) instead of writing every index.
                "DROP INDEX jobs_claimable",
                "CREATE INDEX jobs_claimable ON jobs (created_at, id) WHERE state IN ('queued', 'running')",
                "ALTER TABLE jobs SET (fillfactor = 70)",
            ]),
        .init(
            version: 6, name: "idempotency keys",
            statements: [
                // The first answer to a create sent with an Idempotency-Key, per identity and route.
                """
                CREATE TABLE idempotency_keys (
                    owner text NOT NULL,
                    scope text NOT NULL,
                    key text NOT NULL,
                    fingerprint text NOT NULL,
                    status integer,
                    location text,
                    body bytea,
                    created_at timestamptz NOT NULL DEFAULT now(),
                    PRIMARY KEY (owner, scope, key)
                )
                """,
                "CREATE INDEX idempotency_keys_by_age ON idempotency_keys (created_at)",
                // Bytes moved by the work in flight (inside a part), carried on lease renewals.
                "ALTER TABLE jobs ADD COLUMN bytes_flowing bigint NOT NULL DEFAULT 0",
            ]),
        .init(
            version: 7, name: "webhook events",
            statements: [
                // The outbox: an event per job or client-driven upload reaching a final state, written
                // by a trigger in the transaction of the change itself, so a crash can neither lose
                // one nor send one for a change that rolled back. Sessions of an instance that
                // delivers webhooks set `gateway.webhooks = on`; others record nothing.
                """
                CREATE TABLE webhook_events (
                    id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
                    type text NOT NULL,
                    subject_id uuid NOT NULL,
                    state text NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'delivered', 'failed')),
                    attempts integer NOT NULL DEFAULT 0,
                    next_attempt_at timestamptz NOT NULL DEFAULT clock_timestamp(),
                    last_error text,
                    created_at timestamptz NOT NULL DEFAULT clock_timestamp(),
                    delivered_at timestamptz
                )
                """,
                "CREATE INDEX webhook_events_due ON webhook_events (next_attempt_at) WHERE state = 'pending'",
                "CREATE INDEX webhook_events_settled ON webhook_events (created_at) WHERE state = 'delivered'",
                """
                CREATE FUNCTION gateway_record_event() RETURNS trigger LANGUAGE plpgsql AS $$
                DECLARE
                    kind text;
                BEGIN
                    IF coalesce(current_setting('gateway.webhooks', true), '') <> 'on'
                       OR (TG_OP = 'UPDATE' AND OLD.state = NEW.state) THEN
                        RETURN NEW;
                    END IF;
                    IF TG_TABLE_NAME = 'jobs' AND NEW.state IN ('completed', 'failed', 'canceled') THEN
                        kind := 'job.' || NEW.state;
                    ELSIF TG_TABLE_NAME = 'uploads' AND NEW.state = 'completed' THEN
                        kind := 'upload.completed';
                    ELSIF TG_TABLE_NAME = 'uploads' AND NEW.state = 'aborted' THEN
                        kind := 'upload.canceled';
                    ELSE
                        RETURN NEW;
                    END IF;
                    INSERT INTO webhook_events (type, subject_id) VALUES (kind, NEW.id);
                    -- On the channel every instance already listens on; delivery wakes at once.
                    PERFORM pg_notify('gateway_jobs', 'webhook');
                    RETURN NEW;
                END
                $$
                """,
                "CREATE TRIGGER jobs_event AFTER INSERT OR UPDATE OF state ON jobs FOR EACH ROW EXECUTE FUNCTION gateway_record_event()",
                "CREATE TRIGGER uploads_event AFTER INSERT OR UPDATE OF state ON uploads FOR EACH ROW EXECUTE FUNCTION gateway_record_event()",
            ]),
        .init(
            version: 8, name: "failed webhook events, counted",
            statements: [
                // `/metrics` counts the events given up, every minute on every instance.
                "CREATE INDEX webhook_events_failed ON webhook_events (created_at) WHERE state = 'failed'"
            ]),
        .init(
            version: 9, name: "part checksums",
            statements: [
                // How a job's multipart upload checks its parts ('crc32c' or 'md5'; NULL: created
                // before this, 'md5'), and each part's CRC-32C, which the completion must list.
                "ALTER TABLE jobs ADD COLUMN part_checksum text CHECK (part_checksum IN ('crc32c', 'md5'))",
                "ALTER TABLE job_parts ADD COLUMN checksum text",
            ]),
        .init(
            version: 10, name: "one-way completion",
            statements: [
                // Set under the lease just before a job writes its object: pause and cancel are
                // refused from then on, so the API never reports a cancel the object did not see.
                "ALTER TABLE jobs ADD COLUMN completing boolean NOT NULL DEFAULT false",
                // Complete and abort of a client upload each claim the record before touching S3.
                "ALTER TABLE uploads DROP CONSTRAINT uploads_state_check",
                """
                ALTER TABLE uploads ADD CONSTRAINT uploads_state_check
                    CHECK (state IN ('creating', 'open', 'completing', 'completed', 'aborting', 'aborted'))
                """,
            ]),
        .init(
            version: 11, name: "snake_case failure codes",
            statements: [
                // Failures recorded before the codes were one snake_case list: S3's and the
                // sources' own spellings become the list's (an S3 code it does not name is
                // `storage_rejected`; `SourceHTTP404` is `source_http_error` with its status).
                """
                UPDATE jobs SET error = CASE
                    WHEN error->>'code' ~ '^SourceHTTP[0-9]{3}$'
                        THEN jsonb_build_object('code', 'source_http_error', 'status', substr(error->>'code', 11)::int)
                    WHEN error->>'code' LIKE 'KMS%' THEN jsonb_build_object('code', 'encryption_refused')
                    ELSE jsonb_build_object('code', coalesce((SELECT renamed.new FROM (VALUES
                        ('JobTimeout', 'job_timeout'),
                        ('SpoolFailed', 'spool_failed'),
                        ('SizeMismatch', 'size_mismatch'),
                        ('ETagMismatch', 'etag_mismatch'),
                        ('InvalidJob', 'invalid_job'),
                        ('EntityTooLarge', 'entity_too_large'),
                        ('InvalidPartSize', 'invalid_part_size'),
                        ('InternalError', 'storage_unavailable'),
                        ('NoSuchKey', 'not_found'),
                        ('NotFound', 'not_found'),
                        ('NoSuchUpload', 'no_such_upload'),
                        ('NoSuchBucket', 'bucket_missing'),
                        ('AccessDenied', 'access_denied'),
                        ('InvalidAccessKeyId', 'credentials_rejected'),
                        ('SignatureDoesNotMatch', 'credentials_rejected'),
                        ('ExpiredToken', 'credentials_rejected'),
                        ('SlowDown', 'throttled'),
                        ('ServiceUnavailable', 'storage_unavailable'),
                        ('Timeout', 'storage_unavailable'),
                        ('RequestTimeout', 'storage_unavailable'),
                        ('IncompleteBody', 'storage_unavailable'),
                        ('EntityTooSmall', 'invalid_part'),
                        ('InvalidPart', 'invalid_part'),
                        ('InvalidPartOrder', 'invalid_part'),
                        ('InvalidRange', 'invalid_range'),
                        ('BadDigest', 'checksum_mismatch'),
                        ('BadResponse', 'bad_response'),
                        ('ForbiddenAddress', 'forbidden_address'),
                        ('UnresolvableHost', 'unresolvable_host'),
                        ('InvalidURL', 'invalid_url'),
                        ('TooManyRedirects', 'too_many_redirects'),
                        ('SourceUnreachable', 'source_unreachable'),
                        ('RangeIgnored', 'range_ignored'),
                        ('ResponseTooLarge', 'response_too_large')) AS renamed (old, new)
                        WHERE renamed.old = jobs.error->>'code'), 'storage_rejected'))
                    END
                WHERE error IS NOT NULL AND coalesce(error->>'code', '') NOT IN ('source_changed', 'crash_loop', 'upload_expired', 'job_timeout', 'retries_exhausted', 'spool_too_small', 'spool_failed', 'size_mismatch', 'etag_mismatch', 'invalid_job', 'entity_too_large', 'invalid_part_size', 'internal_error', 'not_found', 'no_such_upload', 'precondition_failed', 'access_denied', 'credentials_rejected', 'bucket_missing', 'throttled', 'storage_unavailable', 'invalid_part', 'invalid_range', 'checksum_mismatch', 'encryption_refused', 'bad_response', 'storage_rejected', 'forbidden_address', 'unresolvable_host', 'invalid_url', 'too_many_redirects', 'source_unreachable', 'source_http_error', 'range_ignored', 'response_too_large')
                """
            ]),
        .init(
            version: 12, name: "jobs that wait out outages",
            statements: [
                // A job sent back to wait by a failure that may pass: when it runs again, why,
                // and how many waits in a row (the exponent of its backoff).
                "ALTER TABLE jobs ADD COLUMN retry_at timestamptz",
                "ALTER TABLE jobs ADD COLUMN last_error jsonb",
                "ALTER TABLE jobs ADD COLUMN retries integer NOT NULL DEFAULT 0",
            ]),
        .init(
            version: 13, name: "one fleet: shared settings, instances, per-identity limits",
            statements: [
                // Settings every instance of a deployment must share, made once (the link secret,
                // by `migrate`, when GATEWAY_LINK_SECRET is not set).
                """
                CREATE TABLE gateway_settings (
                    name text PRIMARY KEY,
                    value text NOT NULL,
                    created_at timestamptz NOT NULL DEFAULT now())
                """,
                // Every running instance, its heartbeat every few seconds: what `/readyz` compares
                // and `GET /v1/admin/instances` lists. An instance is live while its heartbeat is
                // recent; the rows of instances long gone are swept.
                """
                CREATE TABLE instances (
                    id text PRIMARY KEY,
                    host text NOT NULL,
                    version text NOT NULL,
                    schema_version integer NOT NULL,
                    settings_hash text NOT NULL,
                    settings jsonb NOT NULL,
                    started_at timestamptz NOT NULL DEFAULT clock_timestamp(),
                    heartbeat_at timestamptz NOT NULL DEFAULT clock_timestamp())
                """,
                // Creation tokens per identity (GATEWAY_USER_RATE), one bucket for the fleet.
                """
                CREATE TABLE identity_rates (
                    identity text PRIMARY KEY,
                    tokens double precision NOT NULL,
                    at timestamptz NOT NULL,
                    granted boolean NOT NULL)
                """,
                // Long polls, event streams and data streams held open, per identity, by
                // instance: those of an instance whose heartbeat stopped no longer count.
                """
                CREATE TABLE identity_holds (
                    id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
                    identity text NOT NULL,
                    kind text NOT NULL,
                    instance_id text NOT NULL,
                    created_at timestamptz NOT NULL DEFAULT clock_timestamp())
                """,
                "CREATE INDEX identity_holds_identity ON identity_holds (identity, kind)",
                "CREATE INDEX identity_holds_instance ON identity_holds (instance_id)",
            ]),
        Schema.eventFeed,
        Schema.checksums,
        Schema.keyLocks,
        Schema.queuedJobs,
    ])

    /// The newest schema version this binary knows.
    public static var latestVersion: Int { migrations.migrations.map(\.version).max() ?? 0 }
}

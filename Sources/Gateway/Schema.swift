import Postgres

/// The gateway's PostgreSQL schema, as versioned migrations (applied by `transfer-gateway
/// migrate` and at `serve` start; see `Migrations`). Never edit a shipped migration: add one.
enum Schema {
    static let migrations = Migrations([
        .init(version: 1, name: "jobs and their parts", statements: [
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
        .init(version: 2, name: "upload tails", statements: [
            // The bytes of an upload past its last full part, so any instance takes the next request.
            "ALTER TABLE jobs ADD COLUMN upload_tail bytea",
        ]),
        .init(version: 3, name: "client-driven multipart uploads", statements: [
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
            """,
        ]),
    ])
}

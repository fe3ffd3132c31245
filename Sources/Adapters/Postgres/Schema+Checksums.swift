import Postgres

extension Schema {
    /// Migration 15: whole-object checksums (`ObjectChecksum`). A completed job and a completed
    /// client upload keep the checksum of the object they made; `object_checksums` keeps it by
    /// object key and ETag, for the properties and data routes, which report it only while S3
    /// still has that ETag. It is written in the statement that completes the job, so a job
    /// that says it completed with a checksum always has its record.
    static let checksums = Migrations.Migration(
        version: 15, name: "whole-object checksums",
        statements: [
            """
            ALTER TABLE jobs ADD COLUMN checksum_algorithm text CHECK (checksum_algorithm IN ('CRC32C', 'SHA256')),
                             ADD COLUMN checksum_value text
            """,
            """
            ALTER TABLE uploads ADD COLUMN checksum_algorithm text CHECK (checksum_algorithm IN ('CRC32C', 'SHA256')),
                                ADD COLUMN checksum_value text,
                                ADD COLUMN part_checksum text CHECK (part_checksum IN ('crc32c'))
            """,
            // Every checksum a client upload's part URLs were signed with: S3 holds bytes that
            // match one of a part's, so a part with one is known, a part with several is not.
            """
            CREATE TABLE upload_part_checksums (
                upload_id uuid NOT NULL REFERENCES uploads (id) ON DELETE CASCADE,
                part_number integer NOT NULL,
                checksum text NOT NULL,
                PRIMARY KEY (upload_id, part_number, checksum)
            )
            """,
            """
            CREATE TABLE object_checksums (
                object_key text NOT NULL,
                etag text NOT NULL,
                algorithm text NOT NULL CHECK (algorithm IN ('CRC32C', 'SHA256')),
                value text NOT NULL,
                recorded_at timestamptz NOT NULL DEFAULT now(),
                PRIMARY KEY (object_key, etag)
            )
            """,
            "CREATE INDEX object_checksums_by_age ON object_checksums (recorded_at)",
        ])
}

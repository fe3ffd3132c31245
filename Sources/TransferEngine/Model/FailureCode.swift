/// The codes a failed job's `error.code` carries when the engine itself ends it. Codes from S3
/// (`NoSuchKey`, `SlowDown`…) and from sources (`SourceHTTP404`, `ForbiddenAddress`…) pass
/// through as they came, cleaned by `clean`.
public enum FailureCode {
    /// The source changed (size or ETag) after the job planned its parts.
    public static let sourceChanged = "source_changed"
    /// The job's holder died `EngineSettings.crashLimit` times: it is not run again.
    public static let crashLoop = "crash_loop"
    /// An upload job received no byte for `GATEWAY_UPLOAD_TTL`.
    public static let uploadExpired = "upload_expired"
    /// Running longer than `timeoutSeconds` (or `GATEWAY_JOB_TIMEOUT`).
    public static let timeout = "JobTimeout"
    /// A part is larger than the whole spool budget: it can never be spooled.
    public static let spoolTooSmall = "spool_too_small"
    public static let spoolFailed = "SpoolFailed"
    public static let sizeMismatch = "SizeMismatch"
    public static let etagMismatch = "ETagMismatch"
    public static let invalidJob = "InvalidJob"
    public static let entityTooLarge = "EntityTooLarge"
    public static let invalidPartSize = "InvalidPartSize"

    /// A code as it may appear in JSON and metrics: ASCII letters, digits and `_`, at most 64.
    public static func clean(_ code: String) -> String {
        String(String.UnicodeScalarView(code.unicodeScalars.lazy.filter { scalar in
            scalar.isASCII && (scalar.properties.isAlphabetic || ("0"..."9").contains(scalar) || scalar == "_")
        }.prefix(64)))
    }
}

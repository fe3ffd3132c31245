/// Why a job failed: the `code` of its `error`, snake_case on the wire, one list for every
/// cause (the engine's own, the object store's, an import source's). openapi.yaml lists the
/// same values under `FailureCode`; `detail` says what each means to the person who reads it.
///
/// The object store's and the source fetcher's errors arrive already as these cases: their
/// adapters translate S3's and HTTP's own codes where they enter (`Sources/Adapters/S3`), so
/// nothing above them knows S3's spelling.
public enum FailureCode: String, Sendable, CaseIterable, Codable {
    // The engine's own.
    /// The source changed (size or ETag) after the job planned its parts.
    case sourceChanged = "source_changed"
    /// The job's holder died `EngineSettings.crashLimit` times: it is not run again.
    case crashLoop = "crash_loop"
    /// An upload job received no byte for `GATEWAY_UPLOAD_TTL`.
    case uploadExpired = "upload_expired"
    /// Running longer than `timeoutSeconds` (or `GATEWAY_JOB_TIMEOUT`).
    case jobTimeout = "job_timeout"
    /// No byte moved for `stallTimeoutSeconds` (or `GATEWAY_STALL_TIMEOUT`) while the job ran.
    case stalled = "stalled"
    /// A failure that a retry could have helped, once the job's `retryLimit` ran out; the
    /// failure's `cause` names it.
    case retriesExhausted = "retries_exhausted"
    /// A part is larger than the whole spool budget: it can never be spooled.
    case spoolTooSmall = "spool_too_small"
    /// A part could not be written to or read from the spool.
    case spoolFailed = "spool_failed"
    /// The finished object's size is not what the job moved.
    case sizeMismatch = "size_mismatch"
    /// The finished object's ETag does not match the recorded parts.
    case etagMismatch = "etag_mismatch"
    /// The job's record does not describe work the engine can do.
    case invalidJob = "invalid_job"
    /// Larger than `GATEWAY_MAX_OBJECT_SIZE`, or than the size an upload declared.
    case entityTooLarge = "entity_too_large"
    /// No part size within S3's limits fits the object in 10,000 parts.
    case invalidPartSize = "invalid_part_size"
    /// A state the engine should never reach (a bug): the job stops instead of guessing.
    case internalError = "internal_error"

    // The object store's (the `ObjectStore` port's error cases).
    /// The object does not exist.
    case notFound = "not_found"
    /// The S3 multipart upload does not exist (any more).
    case noSuchUpload = "no_such_upload"
    /// A conditional request's condition (`If-Match`) did not hold: the object changed.
    case preconditionFailed = "precondition_failed"
    /// The job wrote with `preventOverwrite` and the key already held an object.
    case objectExists = "object_exists"
    /// The store refused the gateway's credentials access to the object.
    case accessDenied = "access_denied"
    /// The store did not accept the gateway's credentials at all (unknown key, bad signature,
    /// expired token).
    case credentialsRejected = "credentials_rejected"
    /// The bucket the gateway serves does not exist.
    case bucketMissing = "bucket_missing"
    /// The store asked the gateway to slow down.
    case throttled = "throttled"
    /// The store did not answer, or answered that it could not serve (5xx, timeouts, resets).
    case storageUnavailable = "storage_unavailable"
    /// The store refused the parts listed at completion (missing, out of order, too small).
    case invalidPart = "invalid_part"
    /// The store refused a byte range of the object.
    case invalidRange = "invalid_range"
    /// The bytes that reached the store do not match their checksum.
    case checksumMismatch = "checksum_mismatch"
    /// The store could not use the KMS key for the object.
    case encryptionRefused = "encryption_refused"
    /// The store's answer could not be read.
    case badResponse = "bad_response"
    /// The store refused a request for a reason none of the above names.
    case storageRejected = "storage_rejected"

    // An import source's (the `SourceFetcher` port's error cases).
    /// The source URL, or a redirect, leads to an address imports may not reach.
    case forbiddenAddress = "forbidden_address"
    /// The source URL's host name does not resolve.
    case unresolvableHost = "unresolvable_host"
    /// The source URL, or a redirect's `Location`, is not a usable http(s) URL.
    case invalidURL = "invalid_url"
    /// The source redirected more than five times.
    case tooManyRedirects = "too_many_redirects"
    /// The source could not be reached, or broke the connection.
    case sourceUnreachable = "source_unreachable"
    /// The source answered with an HTTP status the import cannot use; the failure's `status`
    /// holds it.
    case sourceHTTPError = "source_http_error"
    /// The source answered a byte range with the whole file after offering ranges.
    case rangeIgnored = "range_ignored"
    /// The source sent more bytes than it announced.
    case responseTooLarge = "response_too_large"
}

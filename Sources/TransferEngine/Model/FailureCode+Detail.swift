/// What a failed job's `error.detail` says for each code: what happened and, where there is
/// something to do, what. The one table of them.
extension FailureCode {
    /// The detail of this code; `status` is a source's HTTP status (`sourceHTTPError`).
    public func detail(status: Int? = nil) -> String {
        switch self {
        case .sourceChanged:
            return "The source changed (its size or ETag) while the job was moving it, so the parts already moved no longer "
                + "belong together. Create a new job to move it as it is now."
        case .crashLoop:
            return "The gateway instance holding this job stopped unexpectedly three times, so it is not run again. "
                + "Operators: the gateway's logs around the job's updatedAt say why; then create the job again."
        case .uploadExpired:
            return "No byte of this upload arrived for GATEWAY_UPLOAD_TTL, so it was given up and its parts removed. Start "
                + "the upload again."
        case .jobTimeout:
            return "The job ran longer than its timeoutSeconds (or GATEWAY_JOB_TIMEOUT). Retry it (POST "
                + "/v1/jobs/{id}/retry) to go on from its stored parts, or create it again with a larger timeoutSeconds."
        case .stalled:
            return "No byte of the job moved for its stallTimeoutSeconds (or GATEWAY_STALL_TIMEOUT): the source or S3 "
                + "stopped sending. Retry it (POST /v1/jobs/{id}/retry) to go on from its stored parts."
        case .retriesExhausted:
            return "A failure that may pass (its cause) outlasted the retries of a part (retryLimit). A copy or import job "
                + "then waits and runs again from its stored parts (retryAt) until it has made no progress for "
                + "GATEWAY_RETRY_WINDOW; once failed, retry it (POST /v1/jobs/{id}/retry) to go on from its stored parts."
        case .spoolTooSmall:
            return "A part of this job is larger than the spool allows (GATEWAY_SPOOL_BUDGET and one identity's share of "
                + "it), so it could never be spooled. Use a smaller partSize, or ask the operator to raise the budget."
        case .spoolFailed:
            return "The gateway could not write or read a part on its spool (GATEWAY_SPOOL_DIR): the disk may be full or "
                + "unwritable. Operators: check the disk; then create the job again."
        case .sizeMismatch:
            return "The finished object's size is not the size the job moved, so it was not accepted. Create the job again."
        case .etagMismatch:
            return "S3's ETag of the finished object does not match the parts the job recorded, so it was not accepted. "
                + "Create the job again."
        case .invalidJob:
            return "The job's recorded description could not be read. Create the job again."
        case .entityTooLarge:
            return "The object is larger than the gateway takes (GATEWAY_MAX_OBJECT_SIZE) or than the size the upload "
                + "declared."
        case .invalidPartSize:
            return "No part size within S3's limits fits this object in 10,000 parts. Choose another partSize."
        case .internalError:
            return "The gateway reached a state it should never reach. Create the job again; operators find the cause in "
                + "the logs."
        case .notFound:
            return "The source object does not exist (any more). Check its accessLevel and key."
        case .noSuchUpload:
            return "S3 no longer has the job's multipart upload (a lifecycle rule or another client aborted it). Create "
                + "the job again."
        case .preconditionFailed:
            return "The object changed since the job pinned it (or, with ifMatch, the destination is no longer the version "
                + "named). Create the job again."
        case .objectExists:
            return "The destination key already holds an object and the job was made with preventOverwrite: nothing was "
                + "replaced."
        case .accessDenied:
            return "S3 refused the gateway's credentials for this object. Operators: check their permissions (object reads "
                + "and writes, multipart uploads, and kms:GenerateDataKey with aws:kms)."
        case .credentialsRejected:
            return "S3 did not accept the gateway's credentials (unknown key, signature or expired token). Operators: "
                + "check the S3 credentials and GATEWAY_S3_REGION."
        case .bucketMissing:
            return "The bucket the gateway serves does not exist. Operators: check GATEWAY_S3_BUCKET."
        case .throttled:
            return "S3 asked the gateway to slow down. " + Self.retryLater
        case .storageUnavailable:
            return "S3 did not answer, or answered that it could not serve. " + Self.retryLater
        case .invalidPart:
            return "S3 refused the recorded parts when completing the object. Create the job again."
        case .invalidRange:
            return "S3 refused a byte range of the source object (it may have shrunk). Create the job again."
        case .checksumMismatch:
            return "The bytes that reached S3 do not match their checksum (corrupted on the way). Create the job again."
        case .encryptionRefused:
            return "S3 could not use the KMS key for the object. Check kmsKeyId and the key's policy, or use AES256."
        case .badResponse:
            return "S3 sent an answer the gateway could not read. Create the job again."
        case .storageRejected:
            return "S3 refused a request of this job. Check the job's options (serverSideEncryption, metadata), then "
                + "create it again; operators find S3's own words in the logs."
        case .forbiddenAddress:
            return "The source URL, or a redirect it sent, leads to a loopback, private, link-local or metadata address, "
                + "which imports may not reach. An operator may allow the host in GATEWAY_IMPORT_ALLOW_HOSTS."
        case .unresolvableHost:
            return "The source URL's host name does not resolve. Check the URL."
        case .invalidURL:
            return "The source URL, or a redirect's Location, is not an http(s) URL without user info. Check the URL."
        case .tooManyRedirects:
            return "The source redirected more than five times. Give the URL the redirects end at."
        case .sourceUnreachable:
            return "The source could not be reached, or broke the connection. Check that it is up, then create the job "
                + "again."
        case .sourceHTTPError:
            return Self.sourceStatus(status)
        case .rangeIgnored:
            return "The source answered a byte range with the whole file after it had offered ranges. Create the job "
                + "again; if it repeats, the source's server is misbehaving."
        case .responseTooLarge:
            return "The source sent more bytes than it announced. Create the job again."
        }
    }

    static let retryLater = "This usually passes by itself."

    static func sourceStatus(_ status: Int?) -> String {
        guard let status else { return "The source answered with an HTTP status the import cannot use. Check the URL." }
        switch status {
        case 401, 403:
            return "The source answered HTTP \(status): it refused the request. A presigned or expiring URL may have run "
                + "out; create the job again with a fresh URL."
        case 404, 410: return "The source answered HTTP \(status): there is no such file at the URL. Check the URL."
        case 429, 500...599: return "The source answered HTTP \(status). " + retryLater
        default: return "The source answered HTTP \(status), which the import cannot use. Check the URL."
        }
    }
}

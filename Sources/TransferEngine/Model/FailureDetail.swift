/// What a failed job's `error.detail` says for each `error.code` (`FailureCode`, the source's
/// and S3's): what happened and, where there is something to do, what. The one table of them;
/// a code it does not hold gets the words of its family (`SourceHTTP…`, S3's others).
public enum FailureDetail {
    /// The detail of `code` (as `FailureCode.clean` left it).
    public static func text(for code: String) -> String {
        if let text = table[code] { return text }
        if code.hasPrefix("SourceHTTP"), let status = Int(code.dropFirst("SourceHTTP".count)) { return sourceStatus(status) }
        if code.hasPrefix("KMS") {
            return "S3 could not use the KMS key for the object (\(code)). Check kmsKeyId and the key's policy, or use AES256."
        }
        return "S3 or the source answered \(code), and the job could not go on (errors that may pass were retried up to the "
            + "job's retryLimit). See the storage provider's documentation of this code, then create the job again."
    }

    static func sourceStatus(_ status: Int) -> String {
        switch status {
        case 401, 403:
            return "The source answered HTTP \(status): it refused the request. A presigned or expiring URL may have run out; "
                + "create the job again with a fresh URL."
        case 404, 410: return "The source answered HTTP \(status): there is no such file at the URL. Check the URL."
        case 429, 500...599:
            return "The source answered HTTP \(status) past the job's retryLimit. Try again later with a new job."
        default: return "The source answered HTTP \(status), which the import cannot use. Check the URL."
        }
    }

    static let retryLater = "Try again later with a new job."

    static let table: [String: String] = [
        // The engine's own (FailureCode).
        FailureCode.sourceChanged: "The source changed (its size or ETag) while the job was moving it, so the parts already "
            + "moved no longer belong together. Create a new job to move it as it is now.",
        FailureCode.crashLoop: "The gateway instance holding this job stopped unexpectedly three times, so it is not run "
            + "again. Operators: the gateway's logs around the job's updatedAt say why; then create the job again.",
        FailureCode.uploadExpired: "No byte of this upload arrived for GATEWAY_UPLOAD_TTL, so it was given up and its parts "
            + "removed. Start the upload again.",
        FailureCode.timeout: "The job ran longer than its timeoutSeconds (or GATEWAY_JOB_TIMEOUT). Create it again with a "
            + "larger timeoutSeconds.",
        FailureCode.spoolTooSmall: "A part of this job is larger than the whole spool budget (GATEWAY_SPOOL_BUDGET), so it "
            + "could never be spooled. Use a smaller partSize, or ask the operator to raise the budget.",
        FailureCode.spoolFailed: "The gateway could not write or read a part on its spool (GATEWAY_SPOOL_DIR): the disk may "
            + "be full or unwritable. Operators: check the disk; then create the job again.",
        FailureCode.sizeMismatch: "The finished object's size is not the size the job moved, so it was not accepted. "
            + "Create the job again.",
        FailureCode.etagMismatch: "S3's ETag of the finished object does not match the parts the job recorded, so it was "
            + "not accepted. Create the job again.",
        FailureCode.invalidJob: "The job's recorded description could not be read. Create the job again.",
        FailureCode.entityTooLarge: "The object is larger than the gateway takes (GATEWAY_MAX_OBJECT_SIZE) or than the "
            + "size the upload declared.",
        FailureCode.invalidPartSize: "No part size within S3's limits fits this object in 10,000 parts. Choose another "
            + "partSize.",
        // The source's (URL imports).
        "ForbiddenAddress": "The source URL, or a redirect it sent, leads to a loopback, private, link-local or metadata "
            + "address, which imports may not reach. An operator may allow the host in GATEWAY_IMPORT_ALLOW_HOSTS.",
        "UnresolvableHost": "The source URL's host name does not resolve. Check the URL.",
        "InvalidURL": "The source URL, or a redirect's Location, is not an http(s) URL without user info. Check the URL.",
        "TooManyRedirects": "The source redirected more than five times. Give the URL the redirects end at.",
        "SourceUnreachable": "The source could not be reached, or broke the connection, past the job's retryLimit. Check "
            + "that it is up, then create the job again.",
        "RangeIgnored": "The source answered a byte range with the whole file after it had offered ranges. Create the job "
            + "again; if it repeats, the source's server is misbehaving.",
        "ResponseTooLarge": "The source sent more bytes than it announced. Create the job again.",
        "BadDigest": "The bytes that reached S3 do not match their checksum (corrupted on the way). Create the job again.",
        // S3's.
        "NoSuchKey": "The source object does not exist (any more). Check its accessLevel and key.",
        "NoSuchUpload": "S3 no longer has the job's multipart upload (a lifecycle rule or another client aborted it). "
            + "Create the job again.",
        "NoSuchBucket": "The bucket the gateway serves does not exist. Operators: check GATEWAY_S3_BUCKET.",
        "AccessDenied": "S3 refused the gateway's credentials for this object. Operators: check their permissions "
            + "(object reads and writes, multipart uploads, and kms:GenerateDataKey with aws:kms).",
        "InvalidAccessKeyId": "S3 does not know the gateway's access key. Operators: check the S3 credentials.",
        "SignatureDoesNotMatch": "S3 did not accept the gateway's signature. Operators: check the secret key and "
            + "GATEWAY_S3_REGION.",
        "ExpiredToken": "The gateway's temporary S3 credentials had expired. Create the job again.",
        "SlowDown": "S3 kept asking the gateway to slow down, past the job's retryLimit. " + retryLater,
        "ServiceUnavailable": "S3 was unavailable past the job's retryLimit. " + retryLater,
        "InternalError": "S3 or the gateway failed internally, past the job's retryLimit. Create the job again; if it "
            + "repeats, operators find the cause in the logs.",
        "Timeout": "S3 did not answer in time, past the job's retryLimit. " + retryLater,
        "RequestTimeout": "S3 gave up waiting for the bytes of a request, past the job's retryLimit. " + retryLater,
        "EntityTooSmall": "S3 refused a part smaller than 5 MiB that was not the last. Create the job again.",
        "InvalidPart": "S3 refused the recorded parts when completing the object. Create the job again.",
        "InvalidPartOrder": "S3 refused the order of the recorded parts when completing the object. Create the job again.",
        "InvalidRange": "S3 refused a byte range of the source object (it may have shrunk). Create the job again.",
        "InvalidRequest": "S3 refused a request of this job as invalid. Check the job's options (serverSideEncryption, "
            + "metadata), then create it again.",
        "BadResponse": "S3 sent an answer the gateway could not read. Create the job again.",
        "IncompleteBody": "S3 sent fewer bytes than it announced, past the job's retryLimit. " + retryLater,
    ]
}

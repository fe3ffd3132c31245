/// Options every job type takes (openapi.yaml, `JobOptions`).
public struct JobOptions: Codable, Sendable, Equatable {
    public var partSize: Int64?
    public var concurrency: Int?
    public var retryLimit: Int?
    public var timeoutSeconds: Int?
    /// Seconds with no byte moving after which a running job fails `stalled`.
    public var stallTimeoutSeconds: Int?
    public var bandwidthLimit: Int64?
    public var contentType: String?
    public var metadata: [String: String]?
    public var cacheControl: String?
    public var contentDisposition: String?
    public var serverSideEncryption: String?
    public var kmsKeyId: String?
    /// The object must not exist when the job writes it (`If-None-Match: *`).
    public var preventOverwrite: Bool?
    /// The object the job replaces must still have this ETag (`If-Match`).
    public var ifMatch: String?

    public init() {}

    /// What the job's final write requires of its key.
    public var writeCondition: WriteCondition? { WriteCondition(preventOverwrite: preventOverwrite, ifMatch: ifMatch) }

    public var attributes: ObjectAttributesSpec {
        ObjectAttributesSpec(
            contentType: contentType, cacheControl: cacheControl, contentDisposition: contentDisposition,
            serverSideEncryption: serverSideEncryption, kmsKeyId: kmsKeyId, metadata: metadata ?? [:])
    }
}

/// The source of a copy or download job: an object key the gateway already checked access to;
/// a download also keeps the type it pinned and the name it is saved as.
public struct ObjectSource: Codable, Sendable, Equatable {
    public var key: String
    public var contentType: String?
    public var filename: String?

    public init(key: String, contentType: String? = nil, filename: String? = nil) {
        self.key = key
        self.contentType = contentType
        self.filename = filename
    }
}

/// What HeadObject reports.
public struct ObjectHead: Sendable, Equatable {
    public var size: Int64
    public var etag: String
    public var contentType: String?
    public var lastModified: String?
    /// `x-amz-meta-*` values by name (without the prefix).
    public var metadata: [String: String]
    public var cacheControl: String?
    public var contentDisposition: String?
    /// `AES256` or `aws:kms`, when S3 says.
    public var serverSideEncryption: String?
    public var kmsKeyId: String?
    /// `x-amz-checksum-crc32c`, `x-amz-checksum-sha256` and `x-amz-checksum-type` of a HEAD
    /// asked with `x-amz-checksum-mode: ENABLED`, when S3 keeps one (`COMPOSITE` values of a
    /// multipart object end in `-N`: a checksum of the parts' checksums, not of the object).
    public var checksumCRC32C: String? = nil
    public var checksumSHA256: String? = nil
    public var checksumType: String? = nil
}

/// A part S3 holds for a multipart upload.
public struct UploadedPart: Sendable, Equatable {
    public var partNumber: Int
    public var etag: String
    public var size: Int64
    /// ISO 8601, as S3 sends it (when it does).
    public var lastModified: String?
    /// The part's CRC-32C (base64), listed for an upload created with that algorithm.
    public var checksumCRC32C: String?

    public init(partNumber: Int, etag: String, size: Int64, lastModified: String? = nil, checksumCRC32C: String? = nil) {
        self.partNumber = partNumber
        self.etag = etag
        self.size = size
        self.lastModified = lastModified
        self.checksumCRC32C = checksumCRC32C
    }
}

/// An object as ListObjectsV2 lists it.
public struct ObjectListing: Sendable, Equatable {
    public var key: String
    public var size: Int64
    public var etag: String
    /// ISO 8601, as S3 sends it.
    public var lastModified: String
}

/// One page of ListObjectsV2.
public struct ListPage: Sendable, Equatable {
    public var objects: [ObjectListing]
    /// With a delimiter: the common prefixes (each ending in the delimiter).
    public var prefixes: [String] = []
    /// The key to list after for the next page, when S3 said there is one.
    public var nextStartAfter: String?
}

/// An unfinished multipart upload in the bucket.
public struct MultipartUploadListing: Sendable, Equatable {
    public var key: String
    public var uploadId: String
    /// ISO 8601, as S3 sends it.
    public var initiated: String
}

/// Object attributes set on PutObject, CopyObject and CreateMultipartUpload.
public struct ObjectAttributes: Sendable, Equatable {
    public var contentType: String?
    public var cacheControl: String?
    public var contentDisposition: String?
    /// `AES256` or `aws:kms`.
    public var serverSideEncryption: String?
    /// The KMS key of `aws:kms` (S3's default key when nil).
    public var kmsKeyId: String?
    public var metadata: [String: String]

    public init(
        contentType: String? = nil, cacheControl: String? = nil, contentDisposition: String? = nil,
        serverSideEncryption: String? = nil, kmsKeyId: String? = nil, metadata: [String: String] = [:]
    ) {
        self.contentType = contentType
        self.cacheControl = cacheControl
        self.contentDisposition = contentDisposition
        self.serverSideEncryption = serverSideEncryption
        self.kmsKeyId = kmsKeyId
        self.metadata = metadata
    }

    var headers: [(String, String)] {
        var out: [(String, String)] = []
        if let contentType { out.append(("Content-Type", contentType)) }
        if let cacheControl { out.append(("Cache-Control", cacheControl)) }
        if let contentDisposition { out.append(("Content-Disposition", contentDisposition)) }
        if let serverSideEncryption { out.append(("x-amz-server-side-encryption", serverSideEncryption)) }
        if let kmsKeyId { out.append(("x-amz-server-side-encryption-aws-kms-key-id", kmsKeyId)) }
        for (name, value) in metadata.sorted(by: { $0.key < $1.key }) { out.append(("x-amz-meta-\(name.lowercased())", value)) }
        return out
    }
}

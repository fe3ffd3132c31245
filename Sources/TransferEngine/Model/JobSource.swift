/// Where a job's bytes come from, by type.
public enum JobSource: Sendable, Equatable {
    /// An upload job: the client sends the bytes to the gateway. A tus upload keeps the
    /// `Upload-Metadata` header it was created with (its `HEAD` returns it as it came).
    case uploaded(tusMetadata: String?)
    /// An import: the http(s) URL the gateway fetches.
    case url(String)
    /// A copy or a download: an object the gateway already checked access to.
    case object(ObjectSource)

    /// The source object of a copy or download job.
    public var object: ObjectSource? {
        if case .object(let source) = self { return source }
        return nil
    }

    /// The URL of an import job.
    public var url: String? {
        if case .url(let url) = self { return url }
        return nil
    }

    /// The `Upload-Metadata` of a tus upload.
    public var tusMetadata: String? {
        if case .uploaded(let metadata) = self { return metadata }
        return nil
    }
}

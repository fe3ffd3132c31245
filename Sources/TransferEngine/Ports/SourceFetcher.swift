/// Where `import` jobs read from: an http(s) URL (the adapter applies the private-network
/// block). Failures are `TransferError`s, with whether a retry can help.
public protocol SourceFetcher: Sendable {
    /// What the source says about itself before any byte moves.
    func probe(_ url: String) async throws -> SourceProbe
    /// Exactly the bytes of `range`, pinned to `ifMatch` when the source gave a strong ETag,
    /// written into `file` from offset 0; returns their CRC-32C, summed as they were written
    /// (nil when the fetcher did not: the part's is then read back from the file). A source
    /// that answers other bytes fails with `TransferError.sourceChanged`.
    @discardableResult
    func fetch(_ url: String, range: ClosedRange<Int64>, ifMatch: String?, into file: SpoolFile) async throws -> UInt32?
    /// The whole body, in order, as it arrives (sources without ranges): the transfer waits
    /// while the reader does not read, so it holds no more than a small buffer. More than
    /// `limit` bytes fails with `EntityTooLarge` as soon as they arrive.
    func stream(_ url: String, limit: Int64) async throws -> any ByteSource
}

public struct SourceProbe: Sendable, Equatable {
    /// Nil when the source does not say (chunked answers).
    public var size: Int64?
    /// A strong ETag, when the source sends one.
    public var etag: String?
    public var acceptsRanges: Bool

    public init(size: Int64?, etag: String?, acceptsRanges: Bool) {
        self.size = size
        self.etag = etag
        self.acceptsRanges = acceptsRanges
    }
}

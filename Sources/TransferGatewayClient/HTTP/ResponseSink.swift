import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Where a response body goes instead of memory (a download's file). `accept` sees the response
/// head before any byte: a refused answer (an error, another ETag) is read into memory as usual,
/// up to a bound, and never reaches `write`.
protocol ResponseSink: AnyObject, Sendable {
    /// Whether the body of this answer belongs in the sink.
    func accept(_ response: HTTPURLResponse) -> Bool
    /// The next bytes of an accepted body, in order. A thrown error cancels the request.
    func write(_ data: Data) throws
}

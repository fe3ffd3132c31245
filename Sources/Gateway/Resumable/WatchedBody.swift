import HTTPServer
import Synchronization
import TransferEngine

/// A request's body that notices its first read. Then, before any byte is taken, it sends the
/// creation's `104 Upload Resumption Supported` (when there is one): the upload receiver reads
/// only once it holds the job's lease, so a client told the upload's URL that then loses its
/// connection finds the job `running` under this request, and its `HEAD` waits for this request
/// to save what arrived (`UploadResource.afterStreaming`) instead of reading an offset this
/// request is about to move. And it tells whether anything was read at all: a request the
/// receiver turned away unread (`busy`) may be tried again with the same body.
final class WatchedBody: ByteSource, Sendable {
    let body: any ByteSource
    let http: HTTPRequest
    private struct State {
        var read = false
        /// The 104's fields until it is sent.
        var informational: HTTPHeaders?
    }
    private let state: Mutex<State>

    init(_ http: HTTPRequest, informational: HTTPHeaders?) {
        self.body = RequestBodyBytes(body: http.body)
        self.http = http
        self.state = Mutex(State(informational: informational))
    }

    /// Whether the receiver asked for any of the body.
    var wasRead: Bool { state.withLock { $0.read } }

    func next() async throws -> ArraySlice<UInt8>? {
        let informational = state.withLock { s -> HTTPHeaders? in
            s.read = true
            defer { s.informational = nil }
            return s.informational
        }
        if let informational { _ = await http.sendInformational(status: 104, headers: informational) }
        return try await body.next()
    }
}

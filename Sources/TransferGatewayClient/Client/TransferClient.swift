// TransferGatewayClient: uploads and downloads over a TransferGateway, for apps and tools.
//
// Owns: the client's public API (`TransferClient`, `TransferTask`, `ObjectReference`), the three
// ways bytes move (`Engine/`: upload jobs, client uploads, downloads), the state directory, and
// HTTP over URLSession (`HTTP/`). Does not own: anything of the server; it speaks only the API of
// `openapi.yaml`, depends on Foundation alone, and uses no unsafe build flags, so an app can
// depend on this package by version.
import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Moves files between this device and a TransferGateway, the way AWS's `AWSS3TransferUtility`
/// did with S3: uploads (small files through the gateway, large ones straight to S3 in parallel
/// parts), downloads resumed by byte range, pause/resume/cancel, and tasks that outlive the
/// process (`tasks` after a relaunch).
///
/// ```swift
/// let client = try TransferClient(
///     configuration: .init(gatewayURL: URL(string: "https://files.example.com")!),
///     tokenProvider: { try await auth.freshIDToken() })
/// let task = try client.upload(file: movie, to: .private("movies/cat.mov"), contentType: "video/quicktime")
/// for await event in task.events { … }
/// ```
public final class TransferClient: Sendable {
    /// Gives the bearer token (a JWT of the identity provider). Called again when the gateway
    /// refuses the token it gave (401), so a refreshed token is picked up mid-transfer.
    public typealias TokenProvider = @Sendable () async throws -> String

    /// The settings this client was made with.
    public let configuration: Configuration
    let runner: TransferRunner
    private let live = Locked<[String: TransferTask]>([:])

    /// A client; its tasks are kept under `configuration.stateDirectory/identifier/`.
    public init(configuration: Configuration, tokenProvider: @escaping TokenProvider) throws {
        self.configuration = configuration
        let session = URLSessionConfiguration.default
        session.allowsCellularAccess = configuration.allowsCellularAccess
        session.timeoutIntervalForRequest = configuration.requestTimeout
        session.httpMaximumConnectionsPerHost = max(6, configuration.partConcurrency + 2)
        session.urlCache = nil
        session.requestCachePolicy = .reloadIgnoringLocalCacheData
        let api = GatewayAPI(
            baseURL: configuration.gatewayURL, transport: HTTPTransport(configuration: session),
            tokens: TokenSource(provider: tokenProvider), retry: RetryPolicy(limit: configuration.retryLimit),
            timeout: configuration.requestTimeout)
        let store = try StateStore(
            directory: configuration.stateDirectory.appendingPathComponent(configuration.identifier, isDirectory: true))
        runner = TransferRunner(
            context: TransferContext(
                api: api, store: store, pacer: configuration.bandwidthLimit.map { Pacer(bytesPerSecond: $0) },
                configuration: configuration))
    }

    /// Cancels every request in flight and ends the client's `URLSession` (which, as any
    /// session with a delegate, otherwise lives until the process ends). Records stay: a new
    /// client on the same state directory goes on. Tasks keep running while the client is merely
    /// released, as `URLSession` tasks do.
    public func invalidate() { runner.context.api.transport.close() }

    /// Uploads the file at `file` to `reference`, starting at once. Files under
    /// `smallFileThreshold` go through an upload job, larger ones straight to S3 in parts.
    public func upload(
        file: URL, to reference: ObjectReference, contentType: String? = nil, metadata: [String: String] = [:]
    ) throws -> TransferTask {
        let size: Int64
        do {
            size = (try FileManager.default.attributesOfItem(atPath: file.path)[.size] as? NSNumber)?.int64Value ?? 0
        } catch {
            throw TransferError(.fileError, "cannot read \(file.lastPathComponent): \(error.localizedDescription)")
        }
        return try start(upload: file, size: size, to: reference, contentType: contentType, metadata: metadata, ownsFile: false)
    }

    /// Uploads `data` to `reference`. The bytes are first written to the state directory, so the
    /// upload survives a relaunch like a file's.
    public func upload(
        data: Data, to reference: ObjectReference, contentType: String? = nil, metadata: [String: String] = [:]
    ) throws -> TransferTask {
        let id = UUID().uuidString.lowercased()
        let file = runner.context.store.dataURL(of: id)
        do { try data.write(to: file) } catch {
            throw TransferError(.fileError, "cannot keep the data in the state directory: \(error.localizedDescription)")
        }
        return try start(
            upload: file, size: Int64(data.count), to: reference, contentType: contentType, metadata: metadata, ownsFile: true, id: id)
    }

    /// Downloads `reference` to `file` (replaced once the download is whole; until then the bytes
    /// are in `file.part`).
    public func download(_ reference: ObjectReference, to file: URL) throws -> TransferTask {
        let record = TransferRecord(
            id: UUID().uuidString.lowercased(), direction: .download, method: .download, reference: reference, filePath: file.path)
        return try begin(record)
    }

    /// Every unfinished task: those running in this process and those the state directory holds
    /// from before (each checked with the gateway first: what it finished or forgot is dropped).
    /// Tasks from before are `waiting` (or `paused`, or `failed` when they may resume) until
    /// `resume()`.
    public var tasks: [TransferTask] {
        get async {
            var found: [TransferTask] = []
            for record in runner.context.store.all() {
                if let task = live.withLock({ $0[record.id] }) {
                    found.append(task)
                    continue
                }
                switch await runner.reconcile(record) {
                case .unfinished(let record):
                    let state: TransferState = record.state == .paused || record.state == .failed ? record.state : .waiting
                    found.append(adopt(TransferTask(record: record, state: state, runner: runner, ended: ended)))
                case .finished, .ended:
                    runner.forget(record)
                }
            }
            return found
        }
    }

    /// The unfinished task with `id`, if any.
    public func task(id: String) async -> TransferTask? {
        await tasks.first { $0.id == id }
    }

    private func start(
        upload file: URL, size: Int64, to reference: ObjectReference, contentType: String?, metadata: [String: String], ownsFile: Bool,
        id: String = UUID().uuidString.lowercased()
    ) throws -> TransferTask {
        let method: TransferRecord.Method = size < configuration.smallFileThreshold ? .uploadJob : .clientUpload
        var record = TransferRecord(id: id, direction: .upload, method: method, reference: reference, filePath: file.path)
        record.ownsFile = ownsFile
        record.size = size
        record.contentType = contentType
        record.metadata = metadata.isEmpty ? nil : metadata
        return try begin(record)
    }

    private func begin(_ record: TransferRecord) throws -> TransferTask {
        try runner.context.store.save(record)
        let task = adopt(TransferTask(record: record, state: .waiting, runner: runner, ended: ended))
        task.resume()
        return task
    }

    /// Registers `task`, or returns the one already registered under its id.
    private func adopt(_ task: TransferTask) -> TransferTask {
        live.withLock { live in
            if let existing = live[task.id] { return existing }
            live[task.id] = task
            return task
        }
    }

    private var ended: @Sendable (String) -> Void {
        { [live] id in _ = live.withLock { $0.removeValue(forKey: id) } }
    }
}

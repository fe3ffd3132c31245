import Foundation

/// One upload or download: a Foundation `Progress`, a sequence of events, and `pause()`,
/// `resume()`, `cancel()`. Made by `TransferClient`; rebuilt by `TransferClient.tasks` after a
/// relaunch. Safe to use from any thread or task.
public final class TransferTask: Identifiable, Sendable, CustomStringConvertible {
    struct Inner {
        var state: TransferState
        var run: Task<Void, Never>?
        var generation = 0
        var subscribers: [UUID: AsyncStream<TransferEvent>.Continuation] = [:]
        var final: TransferEvent?
    }

    /// The task's id, stable across relaunches (its record in the state directory is `<id>.json`).
    public let id: String
    /// Upload or download.
    public let direction: TransferDirection
    /// The object.
    public let reference: ObjectReference
    /// The local file: the source of an upload, the destination of a download.
    public let fileURL: URL
    /// Bytes done of the total: `totalUnitCount` is the size in bytes (-1 until a download knows
    /// it). `pause()`, `resume()` and `cancel()` on it act on the task.
    public let progress: Progress

    let runner: TransferRunner
    let reporter: ProgressReporter
    let inner: Locked<Inner>
    let ended: @Sendable (String) -> Void

    init(record: TransferRecord, state: TransferState, runner: TransferRunner, ended: @escaping @Sendable (String) -> Void) {
        id = record.id
        direction = record.direction
        reference = record.reference
        fileURL = record.fileURL
        progress = Progress(totalUnitCount: record.size ?? -1)
        self.runner = runner
        self.ended = ended
        let inner = Locked(Inner(state: state))
        self.inner = inner
        reporter = ProgressReporter(progress: progress) { event in TransferTask.send(event, to: inner) }
        progress.kind = .file
        progress.isPausable = true
        progress.isCancellable = true
        progress.pausingHandler = { [weak self] in self?.pause() }
        progress.resumingHandler = { [weak self] in self?.resume() }
        progress.cancellationHandler = { [weak self] in self?.cancel() }
    }

    /// Where the task stands now.
    public var state: TransferState { inner.withLock { $0.state } }

    /// The task's events from now on, ending with `completed` or `failed`. Each access is a new
    /// sequence; a task that has ended gives its last event at once.
    public var events: AsyncStream<TransferEvent> {
        AsyncStream(bufferingPolicy: .bufferingNewest(1024)) { continuation in
            let key = UUID()
            let final: TransferEvent? = inner.withLock { inner in
                if let final = inner.final { return final }
                inner.subscribers[key] = continuation
                return nil
            }
            if let final {
                continuation.yield(final)
                continuation.finish()
                return
            }
            continuation.onTermination = { [inner] _ in _ = inner.withLock { $0.subscribers.removeValue(forKey: key) } }
        }
    }

    /// Waits for the task to end: its result, or the error it failed with.
    public func result() async throws -> TransferResult {
        for await event in events {
            switch event {
            case .completed(let result): return result
            case .failed(let error): throw error
            default: continue
            }
        }
        throw TransferError.canceledByUser
    }

    /// A short line for logs: `upload private/notes/a.txt (running)`.
    public var description: String { "\(direction.rawValue) \(reference) (\(state.rawValue))" }

    private static func send(_ event: TransferEvent, to inner: Locked<Inner>) {
        let subscribers = inner.withLock { inner in inner.final == nil ? Array(inner.subscribers.values) : [] }
        for subscriber in subscribers { subscriber.yield(event) }
    }

    func emit(_ event: TransferEvent) { Self.send(event, to: inner) }
}

/// Finishes upload jobs stranded at completion: every byte committed, the write of the object
/// begun, and the request doing it gone with its instance. Their client has nothing left to send
/// (a tus client's `HEAD` shows the whole length), so without this nothing would; each is run
/// as an empty request at its full offset would run it (`UploadReceiver`), which finishes it
/// with the object S3 holds or writes it from the recorded parts.
public struct UploadFinisher: Sendable {
    let store: any UploadJobStore
    let receiver: UploadReceiver

    public init(store: any UploadJobStore, receiver: UploadReceiver) {
        self.store = store
        self.receiver = receiver
    }

    /// One pass; returns how many it finished.
    @discardableResult
    public func finishStranded(limit: Int = 20) async -> Int {
        guard let ids = try? await store.strandedCompletions(limit: limit) else { return 0 }
        var finished = 0
        for id in ids {
            guard let job = try? await store.job(id: id), let total = job.bytesTotal else { continue }
            if case .completed? = try? await receiver.receive(jobID: id, offset: total, body: NoBytes()) { finished += 1 }
        }
        return finished
    }

    /// Passes every `seconds` until the task is cancelled.
    public func run(every seconds: Double) async {
        while !Task.isCancelled {
            try? await Task.sleep(for: .milliseconds(Int(seconds * 1000)))
            await finishStranded()
        }
    }

    /// The body of a request that sends nothing.
    public struct NoBytes: ByteSource {
        public init() {}
        public func next() async throws -> ArraySlice<UInt8>? { nil }
    }
}

import Synchronization

/// Claims runnable jobs and runs up to `slots` of them at once, for one gateway instance.
/// `stop()` cancels what runs and hands every job back by releasing its lease, so another
/// instance takes it at once instead of waiting for the lease to lapse.
public final class JobWorker: Sendable {
    private let store: any JobStore
    private let objects: any ObjectStore
    private let fetcher: (any SourceFetcher)?
    private let spool: (any Spool)?
    private let observer: any JobObserver
    private let settings: EngineSettings
    private let instance: String
    private let slots: Int
    private let pollMilliseconds: Int
    private let loop = Mutex<Task<Void, Never>?>(nil)
    private let running = Atomic<Int>(0)

    public init(store: any JobStore, objects: any ObjectStore, fetcher: (any SourceFetcher)? = nil, spool: (any Spool)? = nil,
                observer: any JobObserver = NoObserver(), settings: EngineSettings, instance: String,
                slots: Int, pollMilliseconds: Int = 250) {
        self.store = store
        self.objects = objects
        self.fetcher = fetcher
        self.spool = spool
        self.observer = observer
        self.settings = settings
        self.instance = instance
        self.slots = max(1, slots)
        self.pollMilliseconds = pollMilliseconds
    }

    public func start() {
        let task = Task { await self.runLoop() }
        loop.withLock { $0 = task }
    }

    /// Cancels running jobs, releases their leases, and returns when the loop has ended.
    public func stop() async {
        let task = loop.withLock { $0 }
        task?.cancel()
        await task?.value
    }

    private func runLoop() async {
        await withTaskGroup(of: Void.self) { group in
            while !Task.isCancelled {
                while running.load(ordering: .acquiring) < slots, !Task.isCancelled,
                      let (job, lease) = try? await store.claim(owner: instance, leaseMilliseconds: settings.leaseMilliseconds) {
                    running.add(1, ordering: .acquiringAndReleasing)
                    group.addTask {
                        await self.execute(job, lease)
                        self.running.subtract(1, ordering: .acquiringAndReleasing)
                    }
                }
                try? await Task.sleep(for: .milliseconds(pollMilliseconds))
            }
            group.cancelAll()
            await group.waitForAll()
        }
    }

    /// Jobs running now.
    public var activeJobs: Int { running.load(ordering: .acquiring) }

    private func execute(_ job: Job, _ lease: Lease) async {
        do {
            _ = try await JobRunner(store: store, objects: objects, fetcher: fetcher, spool: spool, settings: settings,
                                    observer: observer).run(job, lease: lease)
        } catch {
            // Cancelled (shutdown) or the store failed: hand the job back for any instance.
            try? await store.release(lease)
        }
    }
}

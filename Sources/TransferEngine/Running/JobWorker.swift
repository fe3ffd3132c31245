import Synchronization

/// Claims runnable jobs and runs up to `slots` of them at once, for one gateway instance.
/// `stop()` cancels what runs and hands every job back by releasing its lease, so another
/// instance takes it at once instead of waiting for the lease to lapse.
///
/// Fair across identities: claims go to the identity running fewest jobs first; beyond `slots`,
/// `keptSlots` more are kept for identities that run nothing here, so another identity's job
/// starts within a poll however slow or long the parts of the jobs holding every slot (a job of
/// one part yields no part boundary); and when every slot is busy while another identity waits,
/// the identity holding the most slots here hands one job back at its next part boundary.
///
/// With `signals`, a worker with a free slot claims as soon as word comes that a job was queued
/// (`queuedSignal`), not at its next poll; the poll stays, for word that is lost and for jobs
/// handed back (their leases released, not queued again).
public final class JobWorker: Sendable {
    /// What `signals` announce a runnable job under (created, or sent back to wait); no job id
    /// (a UUID) can be it.
    public static let queuedSignal = "queued"

    private struct Running {
        let owner: String
        let control: JobControl
    }

    private let store: any JobStore
    private let objects: any ObjectStore
    private let fetcher: (any SourceFetcher)?
    private let spool: (any Spool)?
    private let observer: any JobObserver
    private let settings: EngineSettings
    private let clock: any EngineClock
    private let checksums: (any ObjectChecksumStore)?
    private let instance: String
    private let slots: Int
    /// Slots beyond `slots`, taken only by jobs of identities that run nothing here.
    public let keptSlots: Int
    private let pollMilliseconds: Int
    private let signals: (any JobSignals)?
    private let loop = Mutex<Task<Void, Never>?>(nil)
    private let running = Mutex<[String: Running]>([:])

    public init(
        store: any JobStore, objects: any ObjectStore, fetcher: (any SourceFetcher)? = nil, spool: (any Spool)? = nil,
        observer: any JobObserver = NoObserver(), settings: EngineSettings, clock: any EngineClock = SystemClock(),
        instance: String, slots: Int, pollMilliseconds: Int = 250, checksums: (any ObjectChecksumStore)? = nil,
        signals: (any JobSignals)? = nil
    ) {
        self.signals = signals
        self.checksums = checksums
        self.store = store
        self.objects = objects
        self.fetcher = fetcher
        self.spool = spool
        self.observer = observer
        self.settings = settings
        self.clock = clock
        self.instance = instance
        self.slots = max(1, slots)
        self.keptSlots = max(1, self.slots / 4)
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

    /// Jobs running now.
    public var activeJobs: Int { running.withLock { $0.count } }

    private func runLoop() async {
        await withTaskGroup(of: Void.self) { group in
            // Whether the last rest ended on word rather than the poll.
            var heard = false
            while !Task.isCancelled {
                var claimed = false
                while !Task.isCancelled, let (job, lease) = await claimNext() {
                    claimed = true
                    let control = JobControl()
                    running.withLock { $0[job.id] = Running(owner: job.owner, control: control) }
                    group.addTask {
                        await self.execute(job, lease, control)
                        // A slot is free: the other jobs asked to make room need not.
                        self.running.withLock { running in
                            running.removeValue(forKey: job.id)
                            for other in running.values { other.control.withdrawYield() }
                        }
                    }
                }
                if activeJobs >= slots { await shareSlots() }
                // Word that brought nothing to claim (another instance was first, or signals
                // that no longer wait) is not waited for again before a poll has passed: word
                // never makes a worker look more often than twice a poll.
                heard = await rest(listening: !heard || claimed)
            }
            group.cancelAll()
            await group.waitForAll()
        }
    }

    /// Waits for the next poll, or, `listening` while an ordinary slot is free, until word that
    /// a job was queued (with those busy, word of each new job would only mean more queries: the
    /// slots kept for other identities are filled at the poll); true when word ended it.
    private func rest(listening: Bool) async -> Bool {
        guard let signals, listening, activeJobs < slots else {
            try? await clock.sleep(milliseconds: pollMilliseconds)
            return false
        }
        let clock = self.clock, poll = pollMilliseconds
        return await withTaskGroup(of: Bool.self) { group in
            group.addTask {
                try? await clock.sleep(milliseconds: poll)
                return false
            }
            group.addTask {
                await signals.changed(Self.queuedSignal)
                return true
            }
            let heard = await group.next() ?? false
            group.cancelAll()
            return heard
        }
    }

    /// A job for a free slot: any identity's while fewer than `slots` run, else, while a kept
    /// slot is free, only of an identity that runs nothing here; nil when none.
    private func claimNext() async -> (Job, Lease)? {
        let (count, owners) = running.withLock { r in (r.count, Set(r.values.map(\.owner))) }
        if count < slots {
            return try? await store.claim(owner: instance, leaseMilliseconds: settings.leaseMilliseconds)
        }
        guard count < slots + keptSlots else { return nil }
        return try? await store.claim(owner: instance, leaseMilliseconds: settings.leaseMilliseconds, excluding: owners)
    }

    /// Every slot is busy: if an identity that runs nothing here waits for a slot, every job of
    /// the identity holding the most slots is asked for one slot back; the first of them to reach
    /// a part boundary (or that only waits for room) gives it, and the others run on.
    private func shareSlots() async {
        let busy = running.withLock { $0 }
        var perOwner: [String: Int] = [:]
        for job in busy.values { perOwner[job.owner, default: 0] += 1 }
        guard let (hog, count) = perOwner.max(by: { $0.value < $1.value }), count > 1,
            let waiting = try? await store.waitingOwners(limit: 16),
            waiting.contains(where: { perOwner[$0] == nil })
        else { return }
        // One slot at a time: a request still open, or taken by a job on its way out, frees one.
        guard !busy.values.contains(where: { $0.control.yieldRequested || $0.control.isYielding }) else { return }
        let request = SlotRequest()
        for job in busy.values where job.owner == hog { job.control.requestYield(request) }
    }

    private func execute(_ job: Job, _ lease: Lease, _ control: JobControl) async {
        do {
            _ = try await JobRunner(
                store: store, objects: objects, fetcher: fetcher, spool: spool, settings: settings,
                clock: clock, observer: observer, checksums: checksums
            ).run(job, lease: lease, control: control)
        } catch {
            // Cancelled (shutdown) or the store failed: hand the job back for any instance. A
            // store that is away is tried again until the lease would have lapsed anyway, so a
            // short database outage is not counted as this holder's death.
            let deadline = clock.now() + Int(settings.leaseMilliseconds)
            while true {
                do {
                    try await store.release(lease)
                    return
                } catch {
                    if Task.isCancelled || clock.now() + 1000 >= deadline { return }
                    try? await Task.sleep(for: .milliseconds(500))
                }
            }
        }
    }
}

import CSystem
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// Something registered with an event loop that wants to hear about its descriptor.
protocol EventLoopHandler: AnyObject {
    /// Called on the loop's thread with the `epoll` event bits.
    func onEvent(_ events: UInt32)
}

/// One thread running `epoll_wait` over many sockets, and the serial executor of all their work.
///
/// Each connection belongs to one loop for its whole life: its socket events, its state changes
/// and its handler tasks (the loop is a `TaskExecutor`) all run on the loop's thread, one at a
/// time, so a request costs no thread hop. Other threads hand work in with `execute`, which
/// wakes the loop through an eventfd only when it is not already awake. Sockets are registered
/// edge-triggered: a handler keeps reading or writing until the kernel says would-block.
final class EventLoop: TaskExecutor, @unchecked Sendable {
    // Confinement: `handlers` is touched only on the loop's thread; the rest is atomic or locked.
    private let epollFD: Int32
    private let wakeFD: Int32
    private let inbox = Mutex<[@Sendable () -> Void]>([])
    private let wakePending = Atomic<Bool>(false)
    private let threadID = Atomic<UInt>(0)
    private let stopping = Atomic<Bool>(false)
    /// Set once `run` has returned: from then on `execute` runs work on the caller's thread.
    private let exited = Atomic<Bool>(false)
    private var handlers: [Int32: EventLoopHandler] = [:]
    /// Work for the next turn of the loop, once its socket events are handled (loop thread only).
    private var nextTurn: [() -> Void] = []

    init() throws {
        epollFD = tg_epoll_create()
        wakeFD = tg_eventfd()
        guard epollFD >= 0, wakeFD >= 0 else {
            throw Listener.BindError(description: "cannot create an event loop: \(SystemCall.errorText(errno))")
        }
        _ = tg_epoll_add(epollFD, wakeFD, TG_EPOLLIN)
    }

    /// Starts the loop's thread.
    func start() {
        var thread = pthread_t()
        let box = Unmanaged.passRetained(self).toOpaque()
        let rc = pthread_create(
            &thread, nil,
            { argument in
                guard let argument else { return nil }
                let loop = Unmanaged<EventLoop>.fromOpaque(argument).takeRetainedValue()
                loop.run()
                return nil
            }, box)
        precondition(rc == 0, "cannot start an event loop thread")
        pthread_detach(thread)
    }

    var inLoop: Bool { threadID.load(ordering: .relaxed) == UInt(pthread_self()) }

    /// Runs `work` on the next turn of the loop, after the sockets' events of that turn: work
    /// that would otherwise keep coming back ahead of other connections (on the loop's thread).
    func executeNextTurn(_ work: @escaping () -> Void) {
        nextTurn.append(work)
    }

    /// Runs `work` on the loop's thread, after what it is doing now.
    func execute(_ work: @escaping @Sendable () -> Void) {
        inbox.withLock { $0.append(work) }
        if exited.load(ordering: .acquiring) {
            // The loop is gone (server stopped): whatever is left runs here, so no task waits forever.
            drainInbox()
            return
        }
        if !inLoop && !wakePending.exchange(true, ordering: .acquiringAndReleasing) {
            SystemCall.signal(eventFD: wakeFD)
        }
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let executor = asUnownedTaskExecutor()
        execute { job.runSynchronously(on: executor) }
    }

    /// Stops the thread once it has drained its inbox (connections are closed first).
    func stop() {
        stopping.store(true, ordering: .relaxed)
        execute {}
    }

    // MARK: on the loop's thread

    func register(_ fd: Int32, events: UInt32, handler: EventLoopHandler) {
        handlers[fd] = handler
        _ = tg_epoll_add(epollFD, fd, events)
    }

    func modify(_ fd: Int32, events: UInt32) {
        _ = tg_epoll_mod(epollFD, fd, events)
    }

    func deregister(_ fd: Int32) {
        handlers[fd] = nil
        _ = tg_epoll_del(epollFD, fd)
    }

    private func run() {
        threadID.store(UInt(pthread_self()), ordering: .relaxed)
        var fds = [Int32](repeating: 0, count: 256)
        var events = [UInt32](repeating: 0, count: 256)
        var pendingWork = false
        while true {
            // Work waiting means: look at the sockets, but do not sleep.
            let timeout: Int32 = pendingWork || !nextTurn.isEmpty ? 0 : -1
            var turn: [() -> Void] = []
            swap(&turn, &nextTurn)
            let count = fds.withUnsafeMutableBufferPointer { f in
                events.withUnsafeMutableBufferPointer { e in tg_epoll_wait(epollFD, f.baseAddress, e.baseAddress, 256, timeout) }
            }
            if count < 0 && errno != EINTR { break }
            for i in 0..<max(0, Int(count)) {
                let fd = fds[i]
                if fd == wakeFD {
                    SystemCall.drain(eventFD: wakeFD)
                    wakePending.store(false, ordering: .releasing)
                } else if let handler = handlers[fd] {
                    handler.onEvent(events[i])
                }
            }
            for work in turn { work() }
            // Run queued work in batches (what a batch queues runs in the next one), up to a
            // budget, then look at the sockets again: cheap for the usual request, which needs
            // two or three batches, and fair to other connections when one keeps queuing.
            var batches = 0
            repeat {
                pendingWork = runOneBatch()
                batches += 1
            } while pendingWork && batches < 8
            if stopping.load(ordering: .relaxed) && handlers.isEmpty && !pendingWork { break }
        }
        exited.store(true, ordering: .releasing)
        drainInbox()
    }

    deinit {
        SystemCall.close(epollFD)
        SystemCall.close(wakeFD)
    }

    /// Runs the work queued so far (not what it queues in turn), so sockets are polled between
    /// batches and one busy connection cannot starve the others. Returns whether more is queued.
    private func runOneBatch() -> Bool {
        let batch = inbox.withLock { work -> [@Sendable () -> Void] in
            var taken: [@Sendable () -> Void] = []
            swap(&taken, &work)
            return taken
        }
        for work in batch { work() }
        return inbox.withLock { !$0.isEmpty }
    }

    private func drainInbox() {
        while true {
            let batch = inbox.withLock { work -> [@Sendable () -> Void] in
                defer { work.removeAll(keepingCapacity: true) }
                return work
            }
            if batch.isEmpty { return }
            for work in batch { work() }
        }
    }
}

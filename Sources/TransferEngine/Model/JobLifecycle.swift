/// How a job moves between states: the one table that the routes (pause, resume, cancel), tus,
/// the worker and the receiver (claims, ends), the janitor (expiry) and both job stores consult.
///
/// | action         | from                                  | to        |
/// |----------------|---------------------------------------|-----------|
/// | pause          | pending, queued, running              | paused    |
/// | resume         | paused                                | queued    |
/// | resumeUpload   | paused                                | pending   |
/// | cancel         | pending, queued, running, paused      | canceled  |
/// | claim          | queued (or running, its lease lapsed) | running   |
/// | claimUpload    | pending (or running, lease lapsed)    | running   |
/// | releaseUpload  | running                               | pending   |
/// | complete       | running                               | completed |
/// | fail           | running                               | failed    |
/// | expire         | pending, paused (or running, lapsed)  | failed    |
/// | postpone       | running                               | queued    |
/// | retry          | failed (error.retryable)              | queued    |
/// | retryUpload    | failed (error.retryable)              | pending   |
///
/// `postpone` sends a job whose failure may pass by waiting back to wait for its `retryAt`;
/// `retry` is its owner's `POST /v1/jobs/{id}/retry` of a job that failed that way.
/// Pause and cancel are refused once a job is `completing` (it has begun to write its object).
///
/// A lease that lapsed is the lease rule's business (`JobStore`), not a state: a job `running`
/// whose holder died is taken over as if it were waiting.
public enum JobLifecycle {
    public enum Action: String, Sendable, CaseIterable {
        case pause, resume, resumeUpload, cancel, claim, claimUpload, releaseUpload, complete, fail, expire
        case postpone, retry, retryUpload
    }

    /// The states `action` may move a job from.
    public static func states(from action: Action) -> Set<Job.State> {
        switch action {
        case .pause: return [.pending, .queued, .running]
        case .resume, .resumeUpload: return [.paused]
        case .cancel: return [.pending, .queued, .running, .paused]
        case .claim: return [.queued]
        case .claimUpload: return [.pending]
        case .releaseUpload, .complete, .fail, .postpone: return [.running]
        case .expire: return [.pending, .paused]
        case .retry, .retryUpload: return [.failed]
        }
    }

    /// The state `action` moves a job to.
    public static func target(of action: Action) -> Job.State {
        switch action {
        case .pause: return .paused
        case .resume, .postpone, .retry: return .queued
        case .resumeUpload, .releaseUpload, .retryUpload: return .pending
        case .cancel: return .canceled
        case .claim, .claimUpload: return .running
        case .complete: return .completed
        case .fail, .expire: return .failed
        }
    }

    /// Whether `action` is refused once the job has begun to write its object (`Job.completing`):
    /// pause and cancel would report a change that did not happen.
    public static func refusedWhileCompleting(_ action: Action) -> Bool {
        action == .pause || action == .cancel
    }

    /// Whether `action` may move a job in `state`.
    public static func allows(_ action: Action, from state: Job.State) -> Bool {
        states(from: action).contains(state)
    }

    /// The action that resumes a paused job of `kind`: an upload waits for its bytes again,
    /// the others are queued for a worker.
    public static func resume(_ kind: Job.Kind) -> Action { kind == .upload ? .resumeUpload : .resume }

    /// The action that retries a failed job of `kind`: an upload waits for its bytes again.
    public static func retry(_ kind: Job.Kind) -> Action { kind == .upload ? .retryUpload : .retry }

    /// The action that ends a running job in `state` (completed or failed).
    public static func ending(_ state: Job.State) -> Action { state == .completed ? .complete : .fail }
}

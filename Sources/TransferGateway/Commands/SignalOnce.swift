import Dispatch
import Synchronization

/// Resumes a continuation on the first signal only, and keeps the signal sources alive.
final class SignalOnce: Sendable {
    private let state: Mutex<(CheckedContinuation<String, Never>?, [any DispatchSourceSignal])>

    init(_ continuation: CheckedContinuation<String, Never>) {
        state = Mutex((continuation, []))
    }

    func keep(_ source: any DispatchSourceSignal) {
        state.withLock { $0.1.append(source) }
    }

    func fire(_ name: String) {
        let continuation = state.withLock { s in
            defer { s.0 = nil }
            return s.0
        }
        continuation?.resume(returning: name)
    }
}

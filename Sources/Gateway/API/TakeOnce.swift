import Synchronization

/// A value handed to a task or an escaping closure that takes it out once, so nothing else
/// keeps a reference to it (an array's memory reused in place must be held by one owner only).
final class TakeOnce<Value: Sendable>: Sendable {
    private let value: Mutex<Value?>

    init(_ value: consuming Value?) { self.value = Mutex(consume value) }

    /// The value the first time; nil after.
    func take() -> Value? { value.withLock { $0.take() } }
}

import Foundation

/// A value behind an `NSLock` (`Mutex` needs macOS 15 and iOS 18; this library builds for
/// macOS 12 and iOS 15).
///
/// `@unchecked Sendable`: `value` is only touched inside `withLock`, under `lock`.
final class Locked<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Value

    init(_ value: Value) {
        self.value = value
    }

    func withLock<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }
}

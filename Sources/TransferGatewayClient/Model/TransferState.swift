/// Where a task stands. A task is `waiting` after a relaunch until `resume()` is called.
public enum TransferState: String, Codable, Sendable {
    /// Not running: rebuilt from the state directory, or made and not yet started.
    case waiting
    /// Moving bytes, or waiting between retries.
    case running
    /// Stopped by `pause()`; no byte moves until `resume()`.
    case paused
    /// Finished; the object (or file) is whole.
    case completed
    /// Ended without finishing (see the `failed` event's error).
    case failed
    /// Stopped by `cancel()`; the server's side was aborted.
    case canceled

    /// Whether the task can move again.
    public var isFinished: Bool { self == .completed || self == .failed || self == .canceled }
}

/// Which way a task moves bytes.
public enum TransferDirection: String, Codable, Sendable {
    /// From a file on this device to an object.
    case upload
    /// From an object to a file on this device.
    case download
}

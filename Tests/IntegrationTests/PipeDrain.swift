import Foundation

/// Reads `handle` on a thread of its own until the end of the pipe, handing each piece to
/// `take`. Not `readabilityHandler`: its dispatch source, left registered at the end of a pipe
/// or outliving the handle's descriptor, can crash libdispatch's event loop on Linux (seen once
/// in CI: a use-after-free in `_dispatch_event_loop_drain` right after a suite that left one so).
func drainOnThread(_ handle: FileHandle, _ take: @escaping @Sendable (Data) -> Void = { _ in }) {
    Thread.detachNewThread {
        while true {
            let data = handle.availableData
            if data.isEmpty { return }
            take(data)
        }
    }
}

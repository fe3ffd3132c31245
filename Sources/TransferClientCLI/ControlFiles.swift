import Foundation

/// Requests from one `transfer-client` process to another: `pause ID` and `cancel ID` leave a
/// file `ID.pause` / `ID.cancel` in the state directory's `control/`, and the process moving that
/// task takes it (removes it) and acts within half a second.
struct ControlFiles: Sendable {
    enum Request: String {
        case pause, cancel
    }

    let directory: URL

    func request(_ request: Request, _ id: String) throws {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        try Data().write(to: directory.appendingPathComponent("\(id).\(request.rawValue)"))
    }

    /// Whether `request` was made for `id`, removing it.
    func take(_ request: Request, _ id: String) -> Bool {
        let file = directory.appendingPathComponent("\(id).\(request.rawValue)")
        return (try? FileManager.default.removeItem(at: file)) != nil
    }

    /// Drops stale requests for `id` (a task being resumed).
    func clear(_ id: String) {
        _ = take(.pause, id)
        _ = take(.cancel, id)
    }
}

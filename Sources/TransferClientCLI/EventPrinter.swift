import Foundation
import TransferGatewayClient

/// Shows a task's events: a progress bar on a terminal (stderr), or with `--json` one JSON object
/// per line on stdout (`{"event":"progress","id":…,"bytes":…,"total":…}`, `completed`, `failed`,
/// `paused`, `resumed`).
struct EventPrinter: Sendable {
    let json: Bool
    let terminal = isatty(STDERR_FILENO) == 1

    func show(_ event: TransferEvent, of task: TransferTask) {
        if json {
            line(Self.object(event, id: task.id))
            return
        }
        switch event {
        case .progress(let done, let total):
            guard terminal else { return }
            FileHandle.standardError.write(Data(("\r" + Self.bar(done, total) + " " + task.reference.description).utf8))
        case .completed(let result):
            if terminal { FileHandle.standardError.write(Data("\n".utf8)) }
            print("completed \(task.id) \(task.reference) \(result.size) bytes\(result.etag.map { " etag \($0)" } ?? "")")
        case .failed(let error):
            if terminal { FileHandle.standardError.write(Data("\n".utf8)) }
            FileHandle.standardError.write(Data("failed \(task.id) \(task.reference): \(error)\n".utf8))
        case .paused:
            if terminal { FileHandle.standardError.write(Data("\n".utf8)) }
            FileHandle.standardError.write(Data("paused \(task.id); transfer-client resume \(task.id) goes on\n".utf8))
        case .resumed:
            break
        }
    }

    func line(_ object: [String: Any]) {
        guard let data = try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes]) else {
            return
        }
        FileHandle.standardOutput.write(data + Data("\n".utf8))
    }

    static func object(_ event: TransferEvent, id: String) -> [String: Any] {
        switch event {
        case .progress(let done, let total):
            var object: [String: Any] = ["event": "progress", "id": id, "bytes": done]
            if let total { object["total"] = total }
            return object
        case .paused: return ["event": "paused", "id": id]
        case .resumed: return ["event": "resumed", "id": id]
        case .completed(let result):
            var object: [String: Any] = ["event": "completed", "id": id, "size": result.size, "reference": result.reference.description]
            if let key = result.objectKey { object["objectKey"] = key }
            if let etag = result.etag { object["etag"] = etag }
            if let checksum = result.checksum { object["checksum"] = ["algorithm": checksum.algorithm, "value": checksum.value] }
            if let file = result.fileURL { object["file"] = file.path }
            return object
        case .failed(let error):
            var object: [String: Any] = ["event": "failed", "id": id, "code": error.code.rawValue, "message": error.message]
            if let status = error.status { object["status"] = status }
            return object
        }
    }

    /// `[#########-----------]  45%  12.0/26.2 MiB`
    static func bar(_ done: Int64, _ total: Int64?) -> String {
        let mib = { (bytes: Int64) in String(format: "%.1f", Double(bytes) / 1_048_576) }
        guard let total, total > 0 else { return "\(mib(done)) MiB" }
        let fraction = min(1, Double(done) / Double(total))
        let filled = Int(fraction * 30)
        return "[" + String(repeating: "#", count: filled) + String(repeating: "-", count: 30 - filled) + "] "
            + String(format: "%3d%%", Int(fraction * 100)) + "  \(mib(done))/\(mib(total)) MiB"
    }
}

import Foundation
import TransferEngine

extension JobRoutes {
    /// A failed job's `error` as every answer shows it (API, events, webhooks): its `code` as
    /// recorded and the `detail` of `FailureDetail` for it. A record that is not `{"code": …}`
    /// is shown as it is.
    static func errorJSON(_ recorded: String) -> [UInt8] {
        guard let object = try? JSONSerialization.jsonObject(with: Data(recorded.utf8)) as? [String: Any],
              let code = object["code"] as? String else { return Array(recorded.utf8) }
        var text = JSONText()
        text.begin()
        text.field("code", .string(code))
        text.field("detail", .string(FailureDetail.text(for: code)))
        text.end()
        return text.bytes
    }
}

import Foundation
import Testing

/// `transfer-gateway serve` as a process: one "listening" line naming its URL, written once the
/// server takes connections and whatever the log level.
extension JobTableTests {
    @Suite struct ServeCommandLiveTests {
        @Test func serveSaysWhereItListensOnceItAccepts() throws {
            let process = Process()
            process.executableURL =
                URL(fileURLWithPath: #filePath).deletingLastPathComponent()
                .appendingPathComponent("../../.build/debug/transfer-gateway").standardizedFileURL
            process.arguments = ["serve"]
            var env = liveEnvironment
            env["GATEWAY_PORT"] = "0"
            env["GATEWAY_LOG_LEVEL"] = "warn"
            process.environment = env
            let errors = Pipe()
            process.standardError = errors
            process.standardOutput = FileHandle.nullDevice
            try process.run()
            defer { process.terminate(); process.waitUntilExit() }
            var text = ""
            let deadline = Date().addingTimeInterval(30)
            while !text.contains(#""msg":"listening""#) && Date() < deadline {
                let chunk = errors.fileHandleForReading.availableData
                if chunk.isEmpty { break }
                text += String(decoding: chunk, as: UTF8.self)
            }
            let line = try #require(text.split(separator: "\n").first { $0.contains(#""msg":"listening""#) }, "\(text)")
            let fields = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            let url = try #require(fields["url"] as? String)
            #expect(url.hasPrefix("http://127.0.0.1:") && url != "http://127.0.0.1:0", "\(url)")
            #expect(text.components(separatedBy: #""msg":"listening""#).count == 2, "one listening line")
            // The URL it names answers at once.
            let health = try Data(contentsOf: URL(string: url + "/healthz")!)
            #expect(String(decoding: health, as: UTF8.self).contains("ok"))
        }
    }
}

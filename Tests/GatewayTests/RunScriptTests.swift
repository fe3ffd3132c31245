import Foundation
import Testing

/// The functions of scripts/run.sh, each taken out of the script and run alone (the script
/// itself starts the whole stack).
struct RunScriptTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// Runs `call` in bash after defining `function` as scripts/run.sh has it; stdout and status.
    static func run(function: String, _ call: String) throws -> (String, Int32) {
        let script = """
            set -euo pipefail
            eval "$(sed -n '/^\(function)() {/,/^}/p' scripts/run.sh)"
            declare -F \(function) >/dev/null || { echo "no \(function) in run.sh" >&2; exit 97; }
            \(call)
            """
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/bash")
        process.arguments = ["-c", script]
        process.currentDirectoryURL = root
        let out = Pipe()
        process.standardOutput = out
        process.standardError = out
        try process.run()
        let data = out.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (String(decoding: data, as: UTF8.self), process.terminationStatus)
    }

    @Test func theLinkSecretIsMadeOnceAndKept() throws {
        let file = NSTemporaryDirectory() + "link-secret-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: file) }
        let (first, status) = try Self.run(function: "link_secret", "link_secret '\(file)'")
        #expect(status == 0)
        #expect(first.count == 64 && first.allSatisfy(\.isHexDigit), "\(first)")
        let (second, _) = try Self.run(function: "link_secret", "link_secret '\(file)'")
        #expect(second == first, "a restart signs with the same key")
        let mode = try FileManager.default.attributesOfItem(atPath: file)[.posixPermissions] as? Int
        #expect(mode == 0o600)
    }

    /// The example's link comes once, right after the line saying the gateway listens, and
    /// every log line is passed on.
    @Test func theLinkIsPrintedAfterTheListeningLine() throws {
        let log =
            #"printf '%s\n' '{"msg":"migrated"}' '{"ts":"x","level":"info","msg":"listening","url":"http://127.0.0.1:8080"}' "#
            + #"'{"msg":"request"}' '{"msg":"listening"}'"#
        let (out, status) = try Self.run(function: "announce_when_listening", log + " | announce_when_listening '[run] LINK'")
        #expect(status == 0)
        let lines = out.split(separator: "\n").map(String.init)
        #expect(lines.count == 5, "\(lines)")
        #expect(lines.firstIndex(of: "[run] LINK") == 2, "\(lines)")
        #expect(lines.filter { $0 == "[run] LINK" }.count == 1)
    }
}

import Foundation
import Testing

@testable import TransferGateway

/// Every subcommand answers `--help` with its usage and exit 0, `--version` the version, and
/// the overview lists them all. Run on the built executable (swift test builds it first).
struct CommandHelpTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    static func run(_ arguments: [String]) throws -> (String, Int32) {
        let process = Process()
        process.executableURL = root.appendingPathComponent(".build/debug/transfer-gateway")
        process.arguments = arguments
        process.environment = ["PATH": "/usr/bin:/bin"]  // no settings: help needs none
        let out = Pipe()
        process.standardOutput = out
        process.standardError = out
        try process.run()
        let data = out.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (String(decoding: data, as: UTF8.self), process.terminationStatus)
    }

    @Test(arguments: CommandHelp.subcommands)
    func eachSubcommandAnswersHelp(_ command: String) throws {
        for flag in ["--help", "-h"] {
            let (out, status) = try Self.run([command, flag])
            #expect(status == 0, "\(command) \(flag): \(out)")
            #expect(out.hasPrefix("usage: transfer-gateway"), "\(command) \(flag): \(out)")
        }
        #expect(try Self.run([command, "--sub", "x", "--help"]).1 == 0, "help anywhere among the options")
    }

    @Test func theOverviewListsEverySubcommand() throws {
        let (out, status) = try Self.run(["--help"])
        #expect(status == 0)
        for command in CommandHelp.subcommands where command != "serve" {
            #expect(out.contains("transfer-gateway \(command)"), "\(command) missing from --help")
        }
    }

    @Test func versionIsTheAPIsVersion() throws {
        let (out, status) = try Self.run(["--version"])
        #expect(status == 0 && out == "transfer-gateway \(CommandHelp.version)\n")
        let openAPI = try String(contentsOf: Self.root.appendingPathComponent("openapi.yaml"), encoding: .utf8)
        #expect(openAPI.contains("\n  version: \(CommandHelp.version)\n"), "openapi.yaml's info.version differs")
    }

    @Test func serveRefusesArgumentsInsteadOfStarting() throws {
        let (out, status) = try Self.run(["serve", "--port", "9000"])
        #expect(status == 64 && out.contains("serve takes no arguments"))
    }
}

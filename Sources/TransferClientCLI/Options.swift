import Foundation
import TransferGatewayClient

/// The command line, parsed: a command, its operands, and the options shared by every command.
struct Options {
    enum Command: String {
        case upload, download, list, resume, pause, cancel
    }

    var command: Command
    var operands: [String] = []
    var gateway: URL?
    var tokenFile: String?
    var stateDirectory: String?
    var partSize: Int64?
    var concurrency: Int?
    var bandwidthLimit: Int64?
    var retryLimit: Int?
    var contentType: String?
    var json = false

    static let usage = """
        usage: transfer-client [options] upload FILE LEVEL/KEY
               transfer-client [options] download LEVEL/KEY FILE
               transfer-client [options] list | resume [ID] | pause ID | cancel ID

        LEVEL/KEY: public/KEY, protected/KEY, private/KEY (the caller's own), or
                   protected@OWNER/KEY to read another identity's protected file.
        options:
          --gateway URL              the gateway (or TRANSFER_GATEWAY_URL)
          --token-file PATH          a file holding the bearer token, read again whenever the
                                     gateway refuses one (or TRANSFER_TOKEN_FILE)
          --state DIR                where unfinished transfers are kept (default ~/.transfer-client)
          --part-size BYTES          part size of large uploads (at least 5242880)
          --concurrency N            parts in flight
          --bandwidth-limit BYTES_PER_S
          --retry-limit N            retries of one request (default 3)
          --content-type TYPE        the uploaded object's content type
          --json                     one JSON event per line on stdout
        exit status: 0 completed, 1 failed, 2 usage, 3 paused, 4 cancelled
        """

    struct UsageError: Error, CustomStringConvertible {
        let description: String
    }

    static func parse(_ arguments: [String], environment: [String: String]) throws -> Options {
        var rest = arguments[...]
        var found: [String] = []
        var options = Options(command: .list)
        func value(_ name: String) throws -> String {
            guard let next = rest.popFirst() else { throw UsageError(description: "\(name) needs a value") }
            return next
        }
        func number(_ name: String) throws -> Int64 {
            guard let number = Int64(try value(name)), number > 0 else { throw UsageError(description: "\(name) takes a positive number") }
            return number
        }
        while let argument = rest.popFirst() {
            switch argument {
            case "--gateway":
                guard let url = URL(string: try value(argument)), url.scheme != nil else {
                    throw UsageError(description: "--gateway takes a URL")
                }
                options.gateway = url
            case "--token-file": options.tokenFile = try value(argument)
            case "--state": options.stateDirectory = try value(argument)
            case "--part-size": options.partSize = try number(argument)
            case "--concurrency": options.concurrency = Int(try number(argument))
            case "--bandwidth-limit": options.bandwidthLimit = try number(argument)
            case "--retry-limit":
                guard let limit = Int(try value(argument)), limit >= 0 else {
                    throw UsageError(description: "--retry-limit takes 0 or more")
                }
                options.retryLimit = limit
            case "--content-type": options.contentType = try value(argument)
            case "--json": options.json = true
            case "-h", "--help": throw UsageError(description: "")
            default:
                if argument.hasPrefix("--") { throw UsageError(description: "unknown option \(argument)") }
                found.append(argument)
            }
        }
        guard let name = found.first, let command = Command(rawValue: name) else { throw UsageError(description: "no command") }
        options.command = command
        options.operands = Array(found.dropFirst())
        let counts: [Command: ClosedRange<Int>] = [
            .upload: 2...2, .download: 2...2, .list: 0...0, .resume: 0...1, .pause: 1...1, .cancel: 1...1,
        ]
        guard counts[command]!.contains(options.operands.count) else { throw UsageError(description: "wrong operands for \(name)") }
        if options.gateway == nil, let url = environment["TRANSFER_GATEWAY_URL"].flatMap(URL.init(string:)) { options.gateway = url }
        if options.tokenFile == nil { options.tokenFile = environment["TRANSFER_TOKEN_FILE"] }
        return options
    }

    /// The library's configuration for these options.
    func configuration() throws -> TransferClient.Configuration {
        guard let gateway else { throw UsageError(description: "--gateway (or TRANSFER_GATEWAY_URL) is required") }
        let state =
            stateDirectory.map { URL(fileURLWithPath: $0, isDirectory: true) }
            ?? FileManager.default.homeDirectoryForCurrentUser.appendingPathComponent(".transfer-client", isDirectory: true)
        var configuration = TransferClient.Configuration(gatewayURL: gateway, stateDirectory: state)
        configuration.partSize = partSize
        if let concurrency { configuration.partConcurrency = concurrency }
        if let retryLimit { configuration.retryLimit = retryLimit }
        configuration.bandwidthLimit = bandwidthLimit
        return configuration
    }
}

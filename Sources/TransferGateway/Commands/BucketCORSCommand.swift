import Foundation
import S3

/// `transfer-gateway bucket-cors [--format xml|json] [--origin ORIGIN]… [--apply]`: prints the
/// `BucketCORSRule` for the origins named by `--origin` (or else `GATEWAY_CORS_ORIGINS`); with
/// `--apply`, puts it on `GATEWAY_S3_BUCKET` with the gateway's S3 settings. Printing needs no
/// other setting.
enum BucketCORSCommand {
    static let usage = """
        usage: transfer-gateway bucket-cors [--format xml|json] [--origin ORIGIN]... [--apply]
          Prints the bucket CORS rule that pages on ORIGIN need for presigned URLs.
          --format xml   S3's CORSConfiguration document (the default)
          --format json  {"CORSRules": [...]} for aws s3api put-bucket-cors --cors-configuration
          --origin O     an allowed origin (repeat for more); without one, GATEWAY_CORS_ORIGINS
          --apply        also put the rule on GATEWAY_S3_BUCKET with the gateway's S3 settings
        """

    enum Format: String { case xml, json }

    /// What the command line asks for.
    struct Options: Equatable {
        var format = Format.xml
        var origins: [String] = []
        var apply = false
        var help = false
    }

    /// The options, or the message of a usage error (exit 64).
    static func parse(_ arguments: [String]) -> Result<Options, CommandLineError> {
        var options = Options()
        var rest = arguments[...]
        while let flag = rest.popFirst() {
            switch flag {
            case "-h", "--help": options.help = true
            case "--apply": options.apply = true
            case "--format", "--origin":
                guard let value = rest.popFirst() else { return .failure(CommandLineError("\(flag) needs a value")) }
                if flag == "--origin" {
                    options.origins.append(value)
                } else {
                    guard let format = Format(rawValue: value) else { return .failure(CommandLineError("--format must be xml or json")) }
                    options.format = format
                }
            default: return .failure(CommandLineError("unknown option \(flag)"))
            }
        }
        return .success(options)
    }

    static func run(_ arguments: [String]) async {
        let options: Options
        switch parse(arguments) {
        case .success(let parsed): options = parsed
        case .failure(let error): Command.fail("\(error.message)\n\(usage)", code: 64)
        }
        if options.help {
            print(usage)
            return
        }
        let origins: [String]
        do {
            origins =
                try options.origins.isEmpty
                ? EnvironmentReader(env: ProcessInfo.processInfo.environment).originList("GATEWAY_CORS_ORIGINS")
                : EnvironmentReader.origins(options.origins, name: "--origin")
        } catch {
            Command.fail("\(error)", code: 2)
        }
        guard !origins.isEmpty else {
            Command.fail(
                "name the origins pages are served from: --origin https://app.example.com (repeatable), or set GATEWAY_CORS_ORIGINS",
                code: 2)
        }
        let rule = BucketCORSRule(origins: origins)
        print(options.format == .json ? rule.json : rule.xml)
        guard options.apply else { return }
        let configuration = Command.configuration()
        guard let bucket = configuration.s3Bucket else { Command.fail("GATEWAY_S3_BUCKET: is required with --apply", code: 2) }
        let client: S3Client
        do {
            client = try await configuration.makeS3ClientFetchingCredentials()
        } catch {
            Command.fail("\(error)", code: 2)
        }
        do {
            try await client.putBucketCors(xml: rule.xml)
            FileHandle.standardError.write(Data("transfer-gateway: bucket CORS rule applied to \(bucket)\n".utf8))
        } catch {
            Command.fail("the bucket refused its CORS rule: \(error)", code: 1)
        }
    }
}

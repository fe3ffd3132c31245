import Foundation
import Gateway
import S3
import SigV4

/// `transfer-gateway bench-s3 upload|download --file PATH --key KEY [--part-size BYTES] [--concurrency N]`
///
/// A subcommand for bench/s3.sh: moves one local file to or from the configured bucket
/// with our S3 client's multipart path and prints one line: `seconds bytes MB/s`.
enum BenchS3Command {
    static func run(_ arguments: [String]) async {
        guard let direction = arguments.first, direction == "upload" || direction == "download" else {
            Command.fail(CommandHelp.usage(of: "bench-s3") ?? "", code: 64)
        }
        var options: [String: String] = [:]
        var index = 1
        while index + 1 < arguments.count {
            options[arguments[index]] = arguments[index + 1]
            index += 2
        }
        guard let file = options["--file"], let key = options["--key"] else {
            Command.fail("bench-s3 needs --file and --key", code: 64)
        }
        let configuration = Command.configuration()
        let partSize = Int64(options["--part-size"] ?? "") ?? Int64(configuration.partSize)
        let concurrency = Int(options["--concurrency"] ?? "") ?? configuration.partConcurrency
        let client: S3Client
        do {
            client = try configuration.makeS3Client()
        } catch {
            Command.fail("\(error)", code: 2)
        }
        let transfer = MultipartFileTransfer(client: client, partSize: partSize, concurrency: concurrency)
        let started = ContinuousClock.now
        do {
            let bytes: Int64
            if direction == "upload" {
                _ = try await transfer.upload(path: file, key: key)
                bytes = Int64((try? FileManager.default.attributesOfItem(atPath: file)[.size] as? Int) ?? 0)
            } else {
                bytes = try await transfer.download(key: key, path: file)
            }
            let elapsed = ContinuousClock.now - started
            let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
            print(String(format: "%.3f %lld %.1f", seconds, bytes, Double(bytes) / seconds / 1_000_000))
        } catch {
            Command.fail("bench-s3 \(direction) failed: \(error)", code: 1)
        }
    }
}

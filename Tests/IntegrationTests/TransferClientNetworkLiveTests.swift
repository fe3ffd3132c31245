import Auth
import Crypto
import Foundation
import Testing

@testable import TransferGateway
@testable import TransferGatewayClient

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The client on a bad network, through `scripts/netshape.py`: the client reaches the gateway through
/// one route of the proxy and S3 (the presigned URLs' public endpoint) through another, both on
/// one shaped link. `transfer-client` runs as a child process where the scenario is the CLI's.
/// The long variants (a 90 s upload on 30 s URLs, the full 3G profile) run with
/// TRANSFER_CLIENT_LONG_PRESIGN=1 and TRANSFER_CLIENT_3G=1 (`scripts/reliability.sh`).
extension JobTableTests {
    @Suite struct TransferClientNetworkLiveTests {
        static let mib = 1 << 20

        /// `scripts/netshape.py` as a child process: the routes' ports and the control port.
        final class NetShape: @unchecked Sendable {
            let process = Process()
            let ports: [Int]
            let controlPort: Int

            struct NoPorts: Error, CustomStringConvertible {
                let output: String
                var description: String { "netshape.py printed no `listening … control P` line: \(output)" }
            }

            init(upstreams: [String], _ arguments: [String]) throws {
                let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
                    .appendingPathComponent("../../scripts/netshape.py").standardizedFileURL
                process.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
                process.arguments = [script.path] + upstreams.flatMap { ["--route", "127.0.0.1:0=\($0)"] } + arguments
                let output = Pipe()
                process.standardOutput = output
                process.standardError = FileHandle.nullDevice
                try process.run()
                var text = ""
                while !text.contains("\n") {
                    let data = output.fileHandleForReading.availableData
                    if data.isEmpty { break }
                    text += String(decoding: data, as: UTF8.self)
                }
                let words = (text.split(separator: "\n").first ?? "").split(separator: " ").map(String.init)
                guard words.first == "listening", words.count == upstreams.count + 3, words[words.count - 2] == "control",
                    let control = Int(words[words.count - 1])
                else {
                    kill(process.processIdentifier, SIGKILL)
                    throw NoPorts(output: text)
                }
                ports = words[1..<(1 + upstreams.count)].compactMap { Int($0) }
                controlPort = control
            }

            deinit {
                kill(process.processIdentifier, SIGKILL)
            }

            /// up, down (bytes), connections, resets, idleSeconds.
            func stats() async throws -> [String: Double] {
                try await call("GET", "/stats")
            }

            /// The stats once no byte has crossed for `seconds` (polled, up to `within` seconds).
            func quiet(for seconds: Double, within limit: Double) async throws -> [String: Double] {
                let deadline = Date().addingTimeInterval(limit)
                var last = try await stats()
                while (last["idleSeconds"] ?? 0) < seconds && Date() < deadline {
                    try await Task.sleep(nanoseconds: 50_000_000)
                    last = try await stats()
                }
                return last
            }

            /// Zeroes the byte counts (and the reset schedule).
            func resetCounters() async throws {
                _ = try await call("POST", "/reset-counters")
            }

            private func call(_ method: String, _ path: String) async throws -> [String: Double] {
                var request = URLRequest(url: URL(string: "http://127.0.0.1:\(controlPort)\(path)")!)
                request.httpMethod = method
                request.timeoutInterval = 10
                let (data, _) = try await URLSession.shared.data(for: request)
                let object = try JSONSerialization.jsonObject(with: data) as? [String: Any] ?? [:]
                return object.compactMapValues { ($0 as? NSNumber)?.doubleValue }
            }
        }

        /// `.build/debug/transfer-client --json` as a child process, its stdout kept in a file.
        final class ClientProcess: @unchecked Sendable {
            let process = Process()
            let output: URL
            let errors: URL

            init(_ arguments: [String], directory: URL) throws {
                let binary = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
                    .appendingPathComponent("../../.build/debug/transfer-client").standardizedFileURL
                let name = UUID().uuidString.prefix(8)
                output = directory.appendingPathComponent("cli-\(name).out")
                errors = directory.appendingPathComponent("cli-\(name).err")
                _ = FileManager.default.createFile(atPath: output.path, contents: nil)
                _ = FileManager.default.createFile(atPath: errors.path, contents: nil)
                process.executableURL = binary
                process.arguments = arguments
                process.standardOutput = try FileHandle(forWritingTo: output)
                process.standardError = try FileHandle(forWritingTo: errors)
                process.standardInput = FileHandle.nullDevice
                try process.run()
            }

            deinit {
                if process.isRunning { kill(process.processIdentifier, SIGKILL) }
            }

            /// The exit status, or nil if it still runs after `seconds` (waits by polling:
            /// `waitUntilExit` hangs in async tests).
            func exitStatus(within seconds: Double) async -> Int32? {
                let deadline = Date().addingTimeInterval(seconds)
                while process.isRunning && Date() < deadline { try? await Task.sleep(nanoseconds: 50_000_000) }
                return process.isRunning ? nil : process.terminationStatus
            }

            /// SIGKILL, then waits (bounded) until it is gone.
            func killHard() async {
                kill(process.processIdentifier, SIGKILL)
                _ = await exitStatus(within: 10)
            }

            /// The JSON events printed so far.
            var events: [[String: Any]] {
                let text = (try? String(contentsOf: output, encoding: .utf8)) ?? ""
                return text.split(separator: "\n").compactMap {
                    (try? JSONSerialization.jsonObject(with: Data($0.utf8))) as? [String: Any]
                }
            }

            var stderr: String { (try? String(contentsOf: errors, encoding: .utf8)) ?? "" }
            var summary: String { "stdout: \(events.suffix(3)) stderr: \(stderr.suffix(600))" }
        }

        /// A gateway whose presigned URLs name the proxy's S3 route, the proxy (route 0: the
        /// gateway, route 1: S3), a user with a token file, a state directory and a folder.
        struct Rig {
            let proxy: NetShape
            let gateway: LiveGateway
            let subject = "net-\(UUID().uuidString.prefix(8))"
            let root: URL
            let state: URL
            let files: URL
            let tokenFile: URL

            init(shape: [String], _ tweak: (inout Configuration) -> Void = { _ in }) throws {
                let environment = try Configuration.fromEnvironment(ProcessInfo.processInfo.environment)
                let s3 = try #require(URL(string: environment.s3Endpoint ?? ""))
                let port = try Self.freePort()
                proxy = try NetShape(upstreams: ["127.0.0.1:\(port)", "\(s3.host ?? "127.0.0.1"):\(s3.port ?? 80)"], shape)
                let s3Route = proxy.ports[1]
                gateway = try LiveGateway {
                    $0.port = port
                    $0.s3PublicEndpoint = "http://127.0.0.1:\(s3Route)"
                    tweak(&$0)
                }
                root = FileManager.default.temporaryDirectory.appendingPathComponent("tgc-net-\(UUID().uuidString)")
                state = root.appendingPathComponent("state")
                files = root.appendingPathComponent("files")
                tokenFile = root.appendingPathComponent("token")
                try FileManager.default.createDirectory(at: files, withIntermediateDirectories: true)
                try writeToken(token())
            }

            /// A port nothing listens on now (the gateway takes it at once).
            static func freePort() throws -> Int {
                let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
                defer { close(fd) }
                var address = sockaddr_in()
                address.sin_family = sa_family_t(AF_INET)
                address.sin_addr.s_addr = inet_addr("127.0.0.1")
                var length = socklen_t(MemoryLayout<sockaddr_in>.size)
                let bound = withUnsafeMutablePointer(to: &address) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 }
                }
                guard bound else { throw TransferError(.fileError, "no free port") }
                return Int(UInt16(bigEndian: address.sin_port))
            }

            /// The gateway through the proxy.
            var gatewayURL: URL { URL(string: "http://127.0.0.1:\(proxy.ports[0])")! }

            /// A token of the rig's user that the gateway accepts for `seconds` more (its
            /// verifier allows 60 s past `exp`).
            func token(seconds: Int = 600) -> String {
                let now = Int(Date().timeIntervalSince1970)
                return TokenMinter.hs256(
                    secret: Array((gateway.configuration.jwtSecret ?? "").utf8), subject: subject, issuedAt: now - 60, ttl: seconds)
            }

            func writeToken(_ token: String) throws {
                try Data(token.utf8).write(to: tokenFile, options: .atomic)
            }

            /// `transfer-client --json` with the rig's gateway (through the proxy), state and token file.
            func cli(_ arguments: [String]) throws -> ClientProcess {
                try ClientProcess(
                    ["--json", "--gateway", gatewayURL.absoluteString, "--state", state.path, "--token-file", tokenFile.path] + arguments,
                    directory: root)
            }

            /// A library client: through the proxy, or straight to the gateway (checks, setup).
            func client(direct: Bool = false, _ tweak: (inout TransferClient.Configuration) -> Void = { _ in }) throws -> TransferClient {
                var configuration = TransferClient.Configuration(
                    gatewayURL: direct ? URL(string: "http://127.0.0.1:\(gateway.port)")! : gatewayURL,
                    identifier: direct ? "direct" : "default", stateDirectory: state)
                tweak(&configuration)
                let token = self.token()
                return try TransferClient(configuration: configuration) { token }
            }

            /// A file of random bytes; its SHA-256.
            func file(_ name: String, bytes: Int) throws -> (URL, [UInt8]) {
                let url = files.appendingPathComponent(name)
                let random = try #require(FileHandle(forReadingAtPath: "/dev/urandom"))
                defer { try? random.close() }
                _ = FileManager.default.createFile(atPath: url.path, contents: nil)
                let out = try FileHandle(forWritingTo: url)
                var left = bytes
                while left > 0 {
                    let chunk = random.readData(ofLength: min(left, 4 * TransferClientNetworkLiveTests.mib))
                    out.write(chunk)
                    left -= chunk.count
                }
                try out.close()
                return (url, try SHA256Stream.file(url.path))
            }

            /// The stored object's SHA-256, read back straight from the gateway.
            func storedSHA(_ key: String) async throws -> [UInt8] {
                let target = files.appendingPathComponent("check-\(UUID().uuidString.prefix(8))")
                _ = try await client(direct: true).download(.private(key), to: target).result()
                defer { try? FileManager.default.removeItem(at: target) }
                return try SHA256Stream.file(target.path)
            }

            /// The one task record of the state directory (the CLI's `default` identifier).
            func record() -> [String: Any]? {
                let folder = state.appendingPathComponent("default")
                let names = (try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []
                guard let name = names.first(where: { $0.hasSuffix(".json") }),
                    let data = FileManager.default.contents(atPath: folder.appendingPathComponent(name).path)
                else { return nil }
                return (try? JSONSerialization.jsonObject(with: data)) as? [String: Any]
            }

            /// Polls until the state record names the server's job or upload.
            func serverID(within seconds: Double) async -> String? {
                let deadline = Date().addingTimeInterval(seconds)
                while Date() < deadline {
                    if let id = record()?["serverID"] as? String { return id }
                    try? await Task.sleep(nanoseconds: 20_000_000)
                }
                return nil
            }

            /// The parts S3 holds for a client upload: number → ETag (asked straight of the gateway).
            func parts(_ uploadID: String) async throws -> [Int: String] {
                let answer = try await gateway.request("GET", "/v1/uploads/\(uploadID)", token: token())
                var parts: [Int: String] = [:]
                for part in answer.json["parts"] as? [[String: Any]] ?? [] {
                    if let number = part["partNumber"] as? Int, let etag = part["etag"] as? String { parts[number] = etag }
                }
                return parts
            }

            func statuses(_ status: Int) -> [String] {
                gateway.logs.all.filter { $0.contains("\"status\":\(status),") }
            }

            func stop() async {
                await gateway.stop()
                try? FileManager.default.removeItem(at: root)
            }
        }

        static func hex(_ bytes: [UInt8]) -> String { bytes.map { String(format: "%02x", $0) }.joined() }

        static func elapsed(since start: Date) -> String { String(format: "%.1f s", Date().timeIntervalSince(start)) }

        // MARK: 1. SIGKILL after two parts, resume sends only the rest

        @Test func cliUploadKilledAfterTwoPartsResumesSendingEachPartOnce() async throws {
            let part = 10 * Self.mib
            let rig = try Rig(shape: ["--up-rate", "20000000"])
            let (source, sha) = try rig.file("sixty.bin", bytes: 6 * part)
            let key = "net/killed-\(UUID().uuidString).bin"
            let start = Date()
            let first = try rig.cli(["--part-size", String(part), "--concurrency", "1", "upload", source.path, "private/\(key)"])
            let uploadID = try #require(await rig.serverID(within: 30), "no upload id: \(first.summary)")
            // Kill as soon as S3 holds two parts (at 20 MB/s one part takes half a second).
            var before: [Int: String] = [:]
            let deadline = Date().addingTimeInterval(60)
            while before.count < 2 && Date() < deadline && first.process.isRunning {
                before = try await rig.parts(uploadID)
                if before.count < 2 { try await Task.sleep(nanoseconds: 30_000_000) }
            }
            await first.killHard()
            #expect(before.count >= 2 && before.count < 6, "parts held at the kill: \(before.keys.sorted())")
            // What the killed process had written still drains from its socket's buffer (up to
            // some MiB on loopback): counted with the first run, once the link is quiet.
            let killedAt = try await rig.proxy.quiet(for: 0.5, within: 30)
            let atKill = try await rig.parts(uploadID)
            for (number, etag) in before { #expect(atKill[number] == etag) }
            #expect(atKill.count < 6)

            try await rig.proxy.resetCounters()
            let second = try rig.cli(["--part-size", String(part), "resume"])
            let status = await second.exitStatus(within: 120)
            #expect(status == 0, "\(second.summary)")
            let resumed = try await rig.proxy.stats()
            let completed = second.events.last { $0["event"] as? String == "completed" }
            #expect(completed?["size"] as? Int == 6 * part)
            // The parts S3 held at the kill are the first ones sent (each its slice's MD5), and the
            // object is made of them and the rest: its ETag is the MD5 of the parts' MD5s, "-6".
            let file = try Data(contentsOf: source)
            let md5s = (0..<6).map { Digest.md5(Array(file[($0 * part)..<(($0 + 1) * part)])) }
            let unquote = { (etag: String) in etag.trimmingCharacters(in: CharacterSet(charactersIn: "\"")) }
            for (number, etag) in atKill { #expect(unquote(etag) == Digest.hex(md5s[number - 1]), "part \(number)") }
            let objectETag = Digest.hex(Digest.md5(md5s.flatMap { $0 })) + "-6"
            #expect(unquote(completed?["etag"] as? String ?? "") == objectETag)
            #expect(try await rig.parts(uploadID).isEmpty)
            // Bytes up: only the missing parts after the kill; at most one part in flight more in all.
            let headers = 256 * 1024
            let missing = 6 - atKill.count
            let resumedUp = Int(resumed["up"] ?? 0)
            let totalUp = Int(killedAt["up"] ?? 0) + resumedUp
            #expect(resumedUp >= missing * part && resumedUp <= missing * part + headers, "resume sent \(resumedUp)")
            #expect(totalUp >= 6 * part && totalUp <= 7 * part + headers, "sent \(totalUp) in all")
            #expect(try await rig.storedSHA(key) == sha)
            print(
                "client-net: killed after \(before.count) parts (\(atKill.count) held), up \(Int(killedAt["up"] ?? 0)) + \(resumedUp) bytes"
                    + " for \(6 * part), \(Self.elapsed(since: start))")
            await rig.stop()
        }

        // MARK: 2. Part URLs that expire mid-upload are signed again

        @Test func throttledUploadOutlivingItsPartURLsCompletesByResigning() async throws {
            let long = ProcessInfo.processInfo.environment["TRANSFER_CLIENT_LONG_PRESIGN"] == "1"
            // CI: 6 s URLs, ~13 s upload; long: 30 s URLs, ~90 s upload.
            let expiry = long ? 30 : 6
            let size = long ? 45 * Self.mib : 24 * Self.mib
            let rate = long ? 524_288 : 2_000_000
            let rig = try Rig(shape: ["--up-rate", String(rate)]) { $0.presignExpiry = expiry }
            let (source, sha) = try rig.file("resign.bin", bytes: size)
            let key = "net/resign-\(UUID().uuidString).bin"
            let client = try rig.client {
                $0.partSize = Int64(5 * Self.mib)
                $0.partConcurrency = 1
            }
            let start = Date()
            let result = try await client.upload(file: source, to: .private(key)).result()
            let seconds = Date().timeIntervalSince(start)
            #expect(result.size == Int64(size))
            #expect(seconds > Double(2 * expiry), "took \(seconds) s")
            let signings = rig.gateway.logs.all.filter { $0.contains("\"POST\"") && $0.contains("/parts") && $0.contains("\"status\":200") }
            #expect(!signings.isEmpty)
            #expect(rig.statuses(403).isEmpty)
            #expect(try await rig.storedSHA(key) == sha)
            print("client-net: \(size) bytes on \(expiry) s URLs in \(String(format: "%.1f", seconds)) s, \(signings.count) signings")
            await rig.stop()
        }

        // MARK: 3. A token that expires mid-upload is replaced through the token file

        @Test func tokenExpiringMidUploadIsReplacedThroughTheTokenFile() async throws {
            let rig = try Rig(shape: ["--up-rate", "2500000"])
            let (source, sha) = try rig.file("token.bin", bytes: 20 * Self.mib)
            let key = "net/token-\(UUID().uuidString).bin"
            // Accepted for 3 s more: the upload (~8 s) outlives it.
            try rig.writeToken(rig.token(seconds: 3))
            let start = Date()
            let cli = try rig.cli(["--part-size", String(5 * Self.mib), "--concurrency", "1", "upload", source.path, "private/\(key)"])
            _ = try #require(await rig.serverID(within: 30), "no upload id: \(cli.summary)")
            // The process has read the short token; the file now holds the next one.
            try rig.writeToken(rig.token())
            let status = await cli.exitStatus(within: 120)
            #expect(status == 0, "\(cli.summary)")
            #expect(Date().timeIntervalSince(start) > 4)
            // The gateway refused the old token once the upload had run past its end, then went on.
            #expect(!rig.statuses(401).isEmpty, "no 401 in \(rig.gateway.logs.all.suffix(5))")
            #expect(cli.events.last?["event"] as? String == "completed")
            #expect(try await rig.storedSHA(key) == sha)
            print("client-net: token replaced mid-upload, \(rig.statuses(401).count) refusals, \(Self.elapsed(since: start))")
            await rig.stop()
        }

        // MARK: 4. A download cut at 40% resumes by Range; a replaced object is sourceChanged

        @Test func cliDownloadCutAtFortyPercentResumesByRangeOrReportsSourceChanged() async throws {
            let size = 20 * Self.mib
            let rig = try Rig(shape: ["--down-rate", "6000000"])
            let direct = try rig.client(direct: true)
            let (source, sha) = try rig.file("dl.bin", bytes: size)
            let key = "net/dl-\(UUID().uuidString).bin"
            _ = try await direct.upload(file: source, to: .private(key)).result()
            let start = Date()

            /// Runs `download KEY TARGET` and kills it once TARGET.part holds 40%; the cut.
            func cut(_ key: String, _ target: URL) async throws -> Int {
                let cli = try rig.cli(["download", "private/\(key)", target.path])
                let partial = target.path + ".part"
                let deadline = Date().addingTimeInterval(60)
                while PartialFile.length(URL(fileURLWithPath: partial)) < Int64(size * 4 / 10) && Date() < deadline && cli.process.isRunning
                {
                    try await Task.sleep(nanoseconds: 20_000_000)
                }
                await cli.killHard()
                return Int(PartialFile.length(URL(fileURLWithPath: partial)))
            }

            let target = rig.files.appendingPathComponent("dl.out")
            let cutAt = try await cut(key, target)
            #expect(cutAt >= size * 4 / 10 && cutAt < size, "cut at \(cutAt)")
            #expect(!FileManager.default.fileExists(atPath: target.path))
            _ = try await rig.proxy.quiet(for: 0.5, within: 30)
            try await rig.proxy.resetCounters()
            let resume = try rig.cli(["resume"])
            #expect(await resume.exitStatus(within: 120) == 0, "\(resume.summary)")
            let down = Int(try await rig.proxy.stats()["down"] ?? 0)
            // Only the rest came down (a Range from the partial file's length), plus headers and what the
            // proxy still held for the killed process (at most its 1 MiB read-ahead).
            #expect(down >= size - cutAt && down <= size - cutAt + Self.mib, "resume read \(down) bytes after a cut at \(cutAt)")
            #expect(try SHA256Stream.file(target.path) == sha)
            #expect(!FileManager.default.fileExists(atPath: target.path + ".part"))

            // Cut again, replace the object, resume: sourceChanged, and no file left as if done.
            let changedKey = "net/changed-\(UUID().uuidString).bin"
            _ = try await direct.upload(file: source, to: .private(changedKey)).result()
            let changed = rig.files.appendingPathComponent("changed.out")
            let secondCut = try await cut(changedKey, changed)
            #expect(secondCut > 0 && secondCut < size)
            let (replacement, _) = try rig.file("v2.bin", bytes: size)
            _ = try await direct.upload(file: replacement, to: .private(changedKey)).result()
            let failed = try rig.cli(["resume"])
            #expect(await failed.exitStatus(within: 120) == 1, "\(failed.summary)")
            #expect(failed.events.last?["code"] as? String == TransferError.Code.sourceChanged.rawValue, "\(failed.summary)")
            #expect(!FileManager.default.fileExists(atPath: changed.path))
            #expect(!FileManager.default.fileExists(atPath: changed.path + ".part"))
            let list = try rig.cli(["list"])
            #expect(await list.exitStatus(within: 30) == 0)
            #expect(list.events.isEmpty, "\(list.summary)")
            print(
                "client-net: download cut at \(cutAt)/\(size), resumed with \(down) bytes; replaced: sourceChanged, \(Self.elapsed(since: start))"
            )
            await rig.stop()
        }

        // MARK: 5. Paused: no byte crosses for 5 s; resume finishes

        @Test func pausedTaskMovesNoByteThenResumeFinishes() async throws {
            // 10 MB/s: what a cancelled request left in the sockets' buffers (the sender's kernel
            // buffer grows to 4 MiB on loopback, and the proxy reads 1 MiB ahead) crosses within
            // the 1 s settle. One part at a time, so one request is cut.
            let rig = try Rig(shape: ["--up-rate", "10000000"])
            let size = 30 * Self.mib
            let (source, sha) = try rig.file("pause.bin", bytes: size)
            let key = "net/pause-\(UUID().uuidString).bin"
            let client = try rig.client {
                $0.partSize = Int64(5 * Self.mib)
                $0.partConcurrency = 1
            }
            let task = try client.upload(file: source, to: .private(key))
            let deadline = Date().addingTimeInterval(60)
            while Int(try await rig.proxy.stats()["up"] ?? 0) < 7 * Self.mib && Date() < deadline && task.state == .running {
                try await Task.sleep(nanoseconds: 20_000_000)
            }
            #expect(task.state == .running)
            task.pause()
            let acknowledged = Date()
            #expect(task.state == .paused)
            // From 1 s after the acknowledgement on, for 5 s, nothing may cross either way.
            while Date().timeIntervalSince(acknowledged) < 1 { try await Task.sleep(nanoseconds: 50_000_000) }
            let settled = try await rig.proxy.stats()
            while Date().timeIntervalSince(acknowledged) < 6.2 { try await Task.sleep(nanoseconds: 200_000_000) }
            let quiet = try await rig.proxy.stats()
            let idle = quiet["idleSeconds"] ?? 0
            #expect(quiet["up"] == settled["up"] && quiet["down"] == settled["down"], "settled \(settled), then \(quiet)")
            #expect(idle >= 5, "idle \(idle) s at \(Date().timeIntervalSince(acknowledged)) s after the pause")
            #expect(Int(quiet["up"] ?? 0) < size)

            let resumedAt = Date()
            task.resume()
            let result = try await task.result()
            #expect(result.size == Int64(size))
            #expect(try await rig.storedSHA(key) == sha)
            print(
                "client-net: paused at \(Int(quiet["up"] ?? 0)) bytes up, idle \(idle) s from \(String(format: "%.2f", 6.2 - idle)) s after"
                    + " the pause; resumed and finished in \(Self.elapsed(since: resumedAt))")
            await rig.stop()
        }

        // MARK: 6. The 3G profile (CI: its latency and frequent resets at a few MB/s)

        @Test func uploadAndDownloadUnderThe3GProfileAreByteIdentical() async throws {
            let full = ProcessInfo.processInfo.environment["TRANSFER_CLIENT_3G"] == "1"
            let shape =
                full
                ? ["--profile", "3g"]
                : ["--latency-ms", "150", "--reset-every", String(5 * Self.mib), "--up-rate", "3000000", "--down-rate", "6000000"]
            let size = (full ? 30 : 15) * Self.mib
            let rig = try Rig(shape: shape)
            let (source, sha) = try rig.file("3g.bin", bytes: size)
            let key = "net/3g-\(UUID().uuidString).bin"
            let start = Date()
            let up = try rig.cli(["--retry-limit", "5", "upload", source.path, "private/\(key)"])
            #expect(await up.exitStatus(within: full ? 900 : 120) == 0, "\(up.summary)")
            let uploaded = Date()
            let target = rig.files.appendingPathComponent("3g.out")
            let down = try rig.cli(["--retry-limit", "5", "download", "private/\(key)", target.path])
            #expect(await down.exitStatus(within: full ? 600 : 120) == 0, "\(down.summary)")
            #expect(try SHA256Stream.file(target.path) == sha)
            #expect(try await rig.storedSHA(key) == sha)
            let stats = try await rig.proxy.stats()
            #expect((stats["resets"] ?? 0) >= 1)
            print(
                "client\(full ? "3g" : "-net-3g-ci"): \(size) bytes up in \(String(format: "%.1f", uploaded.timeIntervalSince(start))) s,"
                    + " down in \(Self.elapsed(since: uploaded)), \(Int(stats["resets"] ?? 0)) resets, sha256 \(Self.hex(sha).prefix(16))…")
            await rig.stop()
        }
    }
}

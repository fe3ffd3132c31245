import Foundation
import Testing

@testable import TransferGatewayClient

/// The client library against an in-process gateway on the real PostgreSQL and SeaweedFS: an
/// upload job, a client upload killed and resumed from the state directory, a download cut and
/// resumed by Range, and an object replaced mid-download. Run among `JobTableTests`, one suite
/// at a time: other live suites cancel every job left active before they begin.
extension JobTableTests {
    @Suite struct TransferClientLiveTests {
        static let mib = 1 << 20

        /// A gateway, a user's token and a fresh state directory.
        struct Rig {
            let gateway: LiveGateway
            let token: String
            let state: URL
            let files: URL

            init(gateway: LiveGateway? = nil) throws {
                self.gateway = try gateway ?? LiveGateway()
                token = self.gateway.token("client-\(UUID().uuidString.prefix(8))")
                let root = FileManager.default.temporaryDirectory.appendingPathComponent("tgc-live-\(UUID().uuidString)")
                state = root.appendingPathComponent("state")
                files = root.appendingPathComponent("files")
                try FileManager.default.createDirectory(at: files, withIntermediateDirectories: true)
            }

            func client(_ tweak: (inout TransferClient.Configuration) -> Void = { _ in }) throws -> TransferClient {
                var configuration = TransferClient.Configuration(
                    gatewayURL: URL(string: "http://127.0.0.1:\(gateway.port)")!, stateDirectory: state, retryLimit: 3)
                tweak(&configuration)
                let token = self.token
                return try TransferClient(configuration: configuration) { token }
            }

            func file(_ name: String, bytes: Int, seed: UInt8 = 7) throws -> (URL, Data) {
                var data = Data(count: bytes)
                data.withUnsafeMutableBytes { raw in
                    var x = UInt32(seed) &* 2_654_435_761 &+ 1
                    for i in 0..<raw.count {
                        x ^= x << 13
                        x ^= x >> 17
                        x ^= x << 5
                        raw[i] = UInt8(truncatingIfNeeded: x)
                    }
                }
                let url = files.appendingPathComponent(name)
                try data.write(to: url)
                return (url, data)
            }

            func stop() async {
                await gateway.stop()
                try? FileManager.default.removeItem(at: state.deletingLastPathComponent())
            }
        }

        @Test func smallFileGoesThroughAnUploadJobAndComesBack() async throws {
            let rig = try Rig()
            let client = try rig.client()
            let (source, bytes) = try rig.file("small.bin", bytes: 3 * Self.mib + 11)
            let key = "client/small-\(UUID().uuidString).bin"
            let upload = try client.upload(file: source, to: .private(key), contentType: "application/x-test", metadata: ["origin": "live"])
            let uploaded = try await upload.result()
            #expect(uploaded.size == Int64(bytes.count))
            #expect(upload.progress.completedUnitCount == Int64(bytes.count))
            let properties = try await rig.gateway.request("GET", "/v1/objects/properties?accessLevel=private&key=\(key)", token: rig.token)
            #expect(properties.json["contentType"] as? String == "application/x-test")
            #expect((properties.json["metadata"] as? [String: String])?["origin"] == "live")

            let target = rig.files.appendingPathComponent("small.out")
            let download = try client.download(.private(key), to: target)
            let downloaded = try await download.result()
            #expect(downloaded.fileURL == target)
            #expect(try Data(contentsOf: target) == bytes)
            #expect(!FileManager.default.fileExists(atPath: target.path + ".part"))

            let fromData = try await client.upload(data: Data("hello".utf8), to: .private(key + ".txt")).result()
            #expect(fromData.size == 5)
            #expect(await client.tasks.isEmpty)
            await rig.stop()
        }

        @Test func uploadJobStoppedMidwayGoesOnWithPatchFromItsCommittedBytes() async throws {
            let rig = try Rig()
            let key = "client/patch-\(UUID().uuidString).bin"
            // Larger than the sockets' buffers hold, so stopping leaves bytes unsent.
            let (source, bytes) = try rig.file("patch.bin", bytes: 10 * Self.mib, seed: 5)
            // The job is made with bandwidthLimit, so the gateway reads the body at 2.5 MiB/s.
            let slow = try rig.client { $0.bandwidthLimit = Int64(5 * Self.mib / 2) }
            let task = try slow.upload(file: source, to: .private(key))
            var jobID: String?
            var committed = 0
            for _ in 0..<100 {
                jobID = try? slow.runner.context.store.load(task.id).serverID
                if let jobID {
                    let job = try await rig.gateway.request("GET", "/v1/jobs/\(jobID)", token: rig.token)
                    committed = job.json["bytesTransferred"] as? Int ?? 0
                    if committed >= Self.mib { break }
                }
                try await Task.sleep(nanoseconds: 50_000_000)
            }
            await task.abandonRun()
            #expect(committed > 0 && committed < bytes.count)

            let again = try rig.client()
            let resumed = try #require(await again.tasks.first { $0.id == task.id })
            let events = resumed.events
            resumed.resume()
            var firstProgress: Int64?
            for await event in events {
                if case .progress(let done, _) = event, firstProgress == nil { firstProgress = done }
                if case .failed(let error) = event { Issue.record("failed: \(error)") }
            }
            #expect(resumed.state == .completed)
            #expect(firstProgress != nil)
            // The rest went as a PATCH from the committed bytes, on the same job.
            let patches = rig.gateway.logs.all.filter { $0.contains("\"PATCH\"") && $0.contains(jobID ?? "-") }
            #expect(!patches.isEmpty, "\(rig.gateway.logs.all.suffix(5))")
            let target = rig.files.appendingPathComponent("patch.out")
            _ = try await again.download(.private(key), to: target).result()
            #expect(try Data(contentsOf: target) == bytes)
            await rig.stop()
        }

        @Test func refusedTokenIsAskedForAgain() async throws {
            let rig = try Rig()
            let asks = Locked(0)
            let token = rig.token
            let client = try TransferClient(
                configuration: .init(gatewayURL: URL(string: "http://127.0.0.1:\(rig.gateway.port)")!, stateDirectory: rig.state)
            ) {
                asks.withLock { $0 += 1 }
                return asks.withLock { $0 } == 1 ? "expired.token.value" : token
            }
            let result = try await client.upload(data: Data(count: 1000), to: .private("client/token-\(UUID().uuidString)")).result()
            #expect(result.size == 1000)
            #expect(asks.withLock { $0 } == 2)
            await rig.stop()
        }

        @Test func clientUploadKilledAfterTwoPartsResumesWithTheRest() async throws {
            let rig = try Rig()
            let key = "client/multi-\(UUID().uuidString).bin"
            let (source, bytes) = try rig.file("multi.bin", bytes: 25 * Self.mib, seed: 3)
            let first = try rig.client {
                $0.partSize = Int64(5 * Self.mib)
                $0.partConcurrency = 1
                $0.bandwidthLimit = Int64(8 * Self.mib)
            }
            let task = try first.upload(file: source, to: .private(key))
            // Wait until S3 holds two parts, then stop as a killed process would (no record written).
            var uploadID: String?
            for _ in 0..<400 {
                uploadID = try? first.runner.context.store.load(task.id).serverID
                if let uploadID {
                    let upload = try await rig.gateway.request("GET", "/v1/uploads/\(uploadID)", token: rig.token)
                    if (upload.json["parts"] as? [[String: Any]])?.count ?? 0 >= 2 { break }
                }
                try await Task.sleep(nanoseconds: 50_000_000)
            }
            await task.abandonRun()
            let id = try #require(uploadID)
            let before = try await rig.gateway.request("GET", "/v1/uploads/\(id)", token: rig.token)
            let held = (before.json["parts"] as? [[String: Any]] ?? []).compactMap { $0["etag"] as? String }
            #expect(held.count >= 2 && held.count < 5)

            // A new client on the same state directory finds the task and sends only the rest.
            let second = try rig.client { $0.partSize = Int64(5 * Self.mib) }
            let found = await second.tasks
            #expect(found.map(\.id) == [task.id])
            let resumed = try #require(found.first)
            #expect(resumed.state == .waiting)
            let events = resumed.events
            resumed.resume()
            var firstProgress: Int64?
            var result: TransferResult?
            for await event in events {
                if case .progress(let done, _) = event, firstProgress == nil { firstProgress = done }
                if case .completed(let done) = event { result = done }
                if case .failed(let error) = event { Issue.record("failed: \(error)") }
            }
            #expect(result?.size == Int64(bytes.count))
            #expect((firstProgress ?? 0) >= Int64(held.count * 5 * Self.mib))
            #expect(await second.tasks.isEmpty)

            let target = rig.files.appendingPathComponent("multi.out")
            _ = try await second.download(.private(key), to: target).result()
            #expect(try Data(contentsOf: target) == bytes)
            await rig.stop()
        }

        @Test func partURLsThatExpireAreSignedAgain() async throws {
            // Presigned part URLs live 2 s; at 4 MiB/s the third 5 MiB part starts 2.5 s in.
            let rig = try Rig(gateway: LiveGateway { $0.presignExpiry = 2 })
            let key = "client/resign-\(UUID().uuidString).bin"
            let (source, bytes) = try rig.file("resign.bin", bytes: 12 * Self.mib, seed: 4)
            let client = try rig.client {
                $0.smallFileThreshold = Int64(Self.mib)
                $0.partConcurrency = 1
                $0.bandwidthLimit = Int64(4 * Self.mib)
            }
            let result = try await client.upload(file: source, to: .private(key)).result()
            #expect(result.size == Int64(bytes.count))
            let signings = rig.gateway.logs.all.filter { $0.contains("/parts") }
            #expect(!signings.isEmpty)
            await rig.stop()
        }

        @Test func downloadCutShortResumesByRange() async throws {
            let rig = try Rig()
            let key = "client/dl-\(UUID().uuidString).bin"
            let (source, bytes) = try rig.file("dl.bin", bytes: 12 * Self.mib, seed: 9)
            let plain = try rig.client()
            _ = try await plain.upload(file: source, to: .private(key)).result()

            let target = rig.files.appendingPathComponent("dl.out")
            let slow = try rig.client { $0.bandwidthLimit = Int64(3 * Self.mib) }
            let task = try slow.download(.private(key), to: target)
            let partial = target.path + ".part"
            for _ in 0..<200 where PartialFile.length(URL(fileURLWithPath: partial)) < Int64(3 * Self.mib) {
                try await Task.sleep(nanoseconds: 50_000_000)
            }
            await task.abandonRun()
            let cut = PartialFile.length(URL(fileURLWithPath: partial))
            #expect(cut >= Int64(3 * Self.mib) && cut < Int64(bytes.count))

            let again = try rig.client()
            let resumed = try #require(await again.tasks.first { $0.id == task.id })
            let events = resumed.events
            resumed.resume()
            var firstProgress: Int64?
            for await event in events {
                if case .progress(let done, _) = event, firstProgress == nil { firstProgress = done }
            }
            #expect(resumed.state == .completed)
            #expect((firstProgress ?? 0) >= cut)
            #expect(try Data(contentsOf: target) == bytes)
            #expect(!FileManager.default.fileExists(atPath: partial))
            await rig.stop()
        }

        @Test func objectReplacedMidDownloadIsSourceChanged() async throws {
            let rig = try Rig()
            let key = "client/changed-\(UUID().uuidString).bin"
            let client = try rig.client()
            let (source, _) = try rig.file("v1.bin", bytes: 12 * Self.mib, seed: 1)
            _ = try await client.upload(file: source, to: .private(key)).result()

            let target = rig.files.appendingPathComponent("changed.out")
            let slow = try rig.client { $0.bandwidthLimit = Int64(3 * Self.mib) }
            let task = try slow.download(.private(key), to: target)
            let partial = URL(fileURLWithPath: target.path + ".part")
            for _ in 0..<200 where PartialFile.length(partial) == 0 { try await Task.sleep(nanoseconds: 50_000_000) }
            await task.abandonRun()
            #expect(PartialFile.length(partial) > 0)

            let (replacement, _) = try rig.file("v2.bin", bytes: 12 * Self.mib, seed: 2)
            _ = try await client.upload(file: replacement, to: .private(key)).result()

            let again = try rig.client()
            let resumed = try #require(await again.tasks.first { $0.id == task.id })
            resumed.resume()
            await #expect {
                try await resumed.result()
            } throws: { error in
                (error as? TransferError)?.code == .sourceChanged
            }
            #expect(!FileManager.default.fileExists(atPath: partial.path))
            #expect(!FileManager.default.fileExists(atPath: target.path))
            #expect(await again.tasks.isEmpty)
            await rig.stop()
        }
    }
}

import Foundation
import S3
import TestSupport
import Testing

@testable import Adapters
@testable import Gateway
@testable import TransferGateway

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Downloads from any instance, links that need no header, the objects API, client-driven
/// uploads listed, and progress inside a part, against the real PostgreSQL and SeaweedFS.
extension JobTableTests {
    @Suite struct DownloadsLiveTests {
        static let secret = "downloads-live-tests-link-secret"

        func gateway(spool: String = NSTemporaryDirectory() + "gateway-spool-" + UUID().uuidString) async throws -> LiveGateway {
            // Jobs left active by earlier runs would count against the identities' quotas.
            try await JobTableTests.retireLeftovers(PostgresPoolFor.live())
            return try LiveGateway {
                $0.spoolDirectory = spool
                $0.linkSecret = Self.secret
            }
        }

        /// A download job made on instance A is served by instance B (no shared spool), whole and
        /// with a Range, byte for byte; with the object's type and the job's file name.
        @Test func aDownloadMadeOnOneInstanceIsServedByAnother() async throws {
            let a = try await gateway(), b = try await gateway()
            let client = try a.configuration.makeS3Client()
            let folder = "dl-\(UUID().uuidString)"
            let body = repeatingBytes(9 << 20, seed: 4, multiplier: 131)
            _ = try await client.putObject(
                key: "private/alice/\(folder)/song.mp3", body: .bytes(body),
                attributes: ObjectAttributes(contentType: "audio/mpeg"))
            let token = a.token("alice")
            let created = try await a.request(
                "POST", "/v1/jobs", token: token,
                json: [
                    "type": "download", "source": ["accessLevel": "private", "key": "\(folder)/song.mp3"], "filename": "Song ü.mp3",
                ])
            #expect(created.status == 201 && created.json["state"] as? String == "completed", "\(created.json)")
            #expect(created.json["bytesTotal"] as? Int == body.count)
            let id = try #require(created.json["id"] as? String, "\(created.status) \(created.json)")
            let whole = try await b.request("GET", "/v1/jobs/\(id)/data", token: token)
            #expect(whole.status == 200 && whole.body == Data(body))
            #expect(whole.headers["Content-Type"] as? String == "audio/mpeg")
            let disposition = whole.headers["Content-Disposition"] as? String ?? ""
            #expect(
                disposition.hasPrefix("attachment; filename=\"Song _.mp3\"") && disposition.contains("filename*=UTF-8''Song%20%C3%BC.mp3"))
            let part = try await b.request("GET", "/v1/jobs/\(id)/data", token: token, headers: ["Range": "bytes=5000000-5000099"])
            #expect(part.status == 206 && part.body == Data(body[5_000_000..<5_000_100]))
            #expect(part.headers["Content-Range"] as? String == "bytes 5000000-5000099/\(body.count)")
            let stranger = try await b.request("GET", "/v1/jobs/\(id)/data", token: b.token("mallory"))
            #expect(stranger.status == 404)
            await a.stop()
            await b.stop()
        }

        /// `dataUrl` works with plain curl (no Authorization) on any instance sharing the secret;
        /// a changed signature, another job's id, or a passed expiry does not.
        @Test func theDataURLNeedsNoHeaderAndExpires() async throws {
            let a = try await gateway(), b = try await gateway()
            let client = try a.configuration.makeS3Client()
            let key = "private/alice/dl-\(UUID().uuidString)/f.bin"
            let body = repeatingBytes(300_000, seed: 5)
            _ = try await client.putObject(key: key, body: .bytes(body))
            let created = try await a.request(
                "POST", "/v1/jobs", token: a.token("alice"),
                json: [
                    "type": "download", "source": ["accessLevel": "private", "key": String(key.dropFirst("private/alice/".count))],
                ])
            let id = try #require(created.json["id"] as? String, "\(created.status) \(created.json)")
            let link = try #require(created.json["dataUrl"] as? String)
            #expect(link.hasPrefix("http://127.0.0.1:\(a.port)/v1/jobs/\(id)/data?expires="))
            let file = NSTemporaryDirectory() + "dataurl-\(UUID().uuidString)"
            defer { try? FileManager.default.removeItem(atPath: file) }
            let fetched = try curl(["-o", file, link.replacingOccurrences(of: ":\(a.port)/", with: ":\(b.port)/")])
            #expect(fetched.status == 200)
            #expect(FileManager.default.contents(atPath: file) == Data(body))
            let tampered = link.replacingOccurrences(of: "signature=", with: "signature=0")
            #expect(try curl(["-o", "/dev/null", tampered]).status == 403)
            // A link made 4,000 s ago (its 3,000 s lifetime over), signed with the real secret.
            let old = DataLinks(secret: Array(Self.secret.utf8), now: { Int(Date().timeIntervalSince1970) - 4000 })
            let expired = "http://127.0.0.1:\(b.port)/v1/jobs/\(id)/data?" + old.query(jobID: id)
            #expect(try curl(["-o", "/dev/null", expired]).status == 403)
            let fresh = DataLinks(secret: Array(Self.secret.utf8), now: { Int(Date().timeIntervalSince1970) })
            #expect(try curl(["-o", "/dev/null", "http://127.0.0.1:\(b.port)/v1/jobs/\(id)/data?" + fresh.query(jobID: id)]).status == 200)
            let other = UUID().uuidString.lowercased()
            #expect(
                try curl(["-o", "/dev/null", "http://127.0.0.1:\(b.port)/v1/jobs/\(other)/data?" + fresh.query(jobID: id)]).status == 403)
            await a.stop()
            await b.stop()
        }

        /// Streams of one owner's job data are bounded (`GATEWAY_USER_MAX_STREAMS`), whoever holds
        /// the link: readers that stop reading hold one read-ahead block each, not a window, the
        /// next stream is 429, another identity's download is served whole, and a reader that hangs
        /// up gives its slot back.
        @Test func stalledReadersOfALinkAreBoundedAndHoldOneBlockEach() async throws {
            try await JobTableTests.retireLeftovers(PostgresPoolFor.live())
            let gateway = try LiveGateway {
                $0.spoolDirectory = NSTemporaryDirectory() + "gateway-spool-" + UUID().uuidString
                $0.linkSecret = Self.secret
                $0.userMaxStreams = 2
            }
            let client = try gateway.configuration.makeS3Client()
            let folder = "dl-stall-\(UUID().uuidString)"
            let body = repeatingBytes(40 << 20, seed: 6)
            _ = try await client.putObject(key: "private/alice/\(folder)/big.bin", body: .bytes(body))
            _ = try await client.putObject(key: "private/bob/\(folder)/own.bin", body: .bytes(Array(body.prefix(6 << 20))))
            let created = try await gateway.request(
                "POST", "/v1/jobs", token: gateway.token("alice"),
                json: [
                    "type": "download", "source": ["accessLevel": "private", "key": "\(folder)/big.bin"],
                ])
            let link = try #require(created.json["dataUrl"] as? String, "\(created.json)")
            // Two readers at 1 KiB/s: the socket buffers fill and the gateway's writes stall.
            var readers: [Process] = []
            for _ in 0..<2 {
                let process = Process()
                process.executableURL = URL(fileURLWithPath: "/usr/bin/curl")
                process.arguments = ["-s", "--limit-rate", "1k", "-o", "/dev/null", link]
                try process.run()
                readers.append(process)
            }
            defer { for reader in readers where reader.isRunning { kill(reader.processIdentifier, SIGKILL) } }
            // The memory budget as `/metrics` shows it (alice's readers are all that runs).
            let held: @Sendable () async -> Int = {
                let text = String(decoding: (try? await gateway.request("GET", "/metrics"))?.body ?? Data(), as: UTF8.self)
                let line = text.split(separator: "\n").first { $0.hasPrefix("gateway_memory_budget_used_bytes ") }
                return line.flatMap { Int($0.split(separator: " ").last ?? "") } ?? -1
            }
            #expect(await eventuallyAsync(timeout: 20) { await held() > 0 }, "both readers started")
            let block = Int(JobRoutes.readAheadBlock)
            let stalled = await eventuallyAsync(timeout: 20) { (0...(2 * block)).contains(await held()) }
            let holding = await held()
            #expect(stalled, "stalled, each holds one \(block >> 20) MiB block: \(holding) bytes held")
            let third = try curl(["-o", "/dev/null", "-D", "-", link])
            #expect(third.status == 429 && third.body.lowercased().contains("retry-after"), "\(third.status)")
            let bobs = try await gateway.request(
                "POST", "/v1/jobs", token: gateway.token("bob"),
                json: [
                    "type": "download", "source": ["accessLevel": "private", "key": "\(folder)/own.bin"],
                ])
            let bobID = try #require(bobs.json["id"] as? String, "\(bobs.json)")
            let own = try await gateway.request("GET", "/v1/jobs/\(bobID)/data", token: gateway.token("bob"))
            #expect(own.status == 200 && own.body == Data(body.prefix(6 << 20)), "another identity is served: \(own.status)")
            for reader in readers { kill(reader.processIdentifier, SIGKILL) }
            #expect(
                await eventuallyAsync(timeout: 10) { (try? curl(["-o", "/dev/null", "-r", "0-99", link]).status) == 206 },
                "the readers' slots came back when they hung up")
            #expect(await eventuallyAsync(timeout: 10) { await held() == 0 })
            await gateway.stop()
        }

        /// An object overwritten after its download job was made answers 412 `source_changed`.
        @Test func anObjectChangedSinceTheJobIs412() async throws {
            let a = try await gateway()
            let client = try a.configuration.makeS3Client()
            let folder = "dl-\(UUID().uuidString)"
            _ = try await client.putObject(key: "private/alice/\(folder)/f.txt", body: .bytes(Array("first".utf8)))
            let token = a.token("alice")
            let created = try await a.request(
                "POST", "/v1/jobs", token: token,
                json: [
                    "type": "download", "source": ["accessLevel": "private", "key": "\(folder)/f.txt"],
                ])
            let id = try #require(created.json["id"] as? String, "\(created.status) \(created.json)")
            #expect(try await a.request("GET", "/v1/jobs/\(id)/data", token: token).body == Data("first".utf8))
            _ = try await client.putObject(key: "private/alice/\(folder)/f.txt", body: .bytes(Array("second".utf8)))
            let changed = try await a.request("GET", "/v1/jobs/\(id)/data", token: token)
            #expect(changed.status == 412 && changed.json["code"] as? String == "source_changed")
            let missing = try await a.request(
                "POST", "/v1/jobs", token: token,
                json: [
                    "type": "download", "source": ["accessLevel": "private", "key": "\(folder)/none.txt"],
                ])
            #expect(missing.status == 404)
            await a.stop()
        }

        /// List, inspect and delete objects under the access rules.
        @Test func objectsAreListedInspectedAndDeleted() async throws {
            let a = try await gateway()
            let client = try a.configuration.makeS3Client()
            let folder = "objs-\(UUID().uuidString)"
            for name in ["a.txt", "b.txt", "c.txt"] {
                _ = try await client.putObject(
                    key: "protected/alice/\(folder)/\(name)", body: .bytes(Array(name.utf8)),
                    attributes: ObjectAttributes(contentType: "text/plain", metadata: ["n": name]))
            }
            let alice = a.token("alice"), bob = a.token("bob")
            let page = try await a.request("GET", "/v1/objects?accessLevel=protected&prefix=\(folder)/&limit=2", token: alice)
            let objects = page.json["objects"] as? [[String: Any]] ?? []
            #expect(objects.compactMap { $0["key"] as? String } == ["\(folder)/a.txt", "\(folder)/b.txt"], "\(page.json)")
            #expect(objects.first?["objectKey"] as? String == "protected/alice/\(folder)/a.txt" && objects.first?["size"] as? Int == 5)
            let cursor = try #require(page.json["nextCursor"] as? String)
            let next = try await a.request(
                "GET", "/v1/objects?accessLevel=protected&prefix=\(folder)/&limit=2&cursor=\(cursor)", token: alice)
            #expect((next.json["objects"] as? [[String: Any]] ?? []).compactMap { $0["key"] as? String } == ["\(folder)/c.txt"])
            // Bob reads Alice's protected files by naming her; he may not delete them.
            let theirs = try await a.request(
                "GET", "/v1/objects?accessLevel=protected&targetIdentityId=alice&prefix=\(folder)/", token: bob)
            #expect((theirs.json["objects"] as? [Any])?.count == 3)
            #expect(try await a.request("GET", "/v1/objects?accessLevel=private&targetIdentityId=alice", token: bob).status == 403)
            let properties = try await a.request("GET", "/v1/objects/properties?accessLevel=protected&key=\(folder)/b.txt", token: alice)
            #expect(properties.json["contentType"] as? String == "text/plain")
            #expect(properties.json["metadata"] as? [String: String] == ["n": "b.txt"])
            #expect((properties.json["lastModified"] as? String)?.hasSuffix("Z") == true)
            #expect(
                try await a.request("DELETE", "/v1/objects?accessLevel=protected&key=\(folder)/b.txt&targetIdentityId=alice", token: bob)
                    .status == 403)
            #expect(try await a.request("DELETE", "/v1/objects?accessLevel=protected&key=\(folder)/b.txt", token: alice).status == 204)
            #expect(try await a.request("DELETE", "/v1/objects?accessLevel=protected&key=\(folder)/b.txt", token: alice).status == 404)
            #expect(
                try await a.request("GET", "/v1/objects/properties?accessLevel=protected&key=\(folder)/b.txt", token: alice).status == 404)
            await a.stop()
        }

        /// An app that restarts finds its open client-driven uploads.
        @Test func openClientUploadsAreListed() async throws {
            let a = try await gateway()
            let token = a.token("lister-\(UUID().uuidString.prefix(8))")
            let opened = try await a.request(
                "POST", "/v1/uploads", token: token,
                json: [
                    "accessLevel": "private", "key": "u.bin", "size": 12 << 20, "cacheControl": "no-cache",
                ])
            #expect(opened.status == 201, "\(opened.json)")
            let id = try #require(opened.json["uploadId"] as? String)
            let listed = try await a.request("GET", "/v1/uploads", token: token)
            let uploads = listed.json["uploads"] as? [[String: Any]] ?? []
            #expect(uploads.count == 1 && uploads.first?["uploadId"] as? String == id && uploads.first?["state"] as? String == "open")
            #expect(try await a.request("DELETE", "/v1/uploads/\(id)", token: token).status == 204)
            #expect((try await a.request("GET", "/v1/uploads", token: token).json["uploads"] as? [Any])?.count == 0)
            await a.stop()
        }

        /// An upload fed at 1 MiB/s shows its progress inside its first 5 MiB part, at least three
        /// distinct `bytesTransferred` values before the part is whole.
        @Test func progressMovesInsideAPart() async throws {
            let a = try await gateway()
            let token = a.token("alice")
            let size = 6 << 20
            let created = try await a.request(
                "POST", "/v1/jobs", token: token,
                json: [
                    "type": "upload", "accessLevel": "private", "key": "progress-\(UUID().uuidString).bin", "size": size,
                ])
            let id = try #require(created.json["id"] as? String, "\(created.status) \(created.json)")
            let port = a.port
            let sender = Task.detached {
                let client = try LoopbackClient(port: port)
                try client.send(
                    "PUT /v1/jobs/\(id)/data HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer \(token)\r\n"
                        + "Content-Type: application/octet-stream\r\nContent-Length: \(size)\r\n\r\n")
                let chunk = repeatingBytes(64 << 10, seed: 6)
                for _ in 0..<(size / chunk.count) {
                    try client.send(chunk)
                    usleep(62_500)  // 64 KiB sixteen times a second: 1 MiB/s
                }
                return try client.readResponse(timeout: 30).status
            }
            var seen = Set<Int>()
            let deadline = Date().addingTimeInterval(20)
            while Date() < deadline {
                let job = try await a.request("GET", "/v1/jobs/\(id)", token: token).json
                if let bytes = job["bytesTransferred"] as? Int, bytes > 0, bytes < 5 << 20 { seen.insert(bytes) }
                if (job["bytesCommitted"] as? Int ?? 0) >= 5 << 20 || job["state"] as? String == "completed" { break }
                try await Task.sleep(for: .milliseconds(200))
            }
            #expect(seen.count >= 3, "values seen inside the first part: \(seen.sorted())")
            #expect(try await sender.value == 200)
            await a.stop()
        }
    }
}

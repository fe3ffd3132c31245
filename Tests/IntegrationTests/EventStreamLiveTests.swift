import Foundation
import Synchronization
import Testing

@testable import TransferGateway

/// curl reading an event stream (`-N`, unbuffered), its lines gathered as they come.
final class StreamReader: @unchecked Sendable {
    let process = Process()
    private let received = Mutex<[String]>([])
    private let head = Mutex<String>("")

    init(_ url: String, headers: [String] = []) throws {
        process.executableURL = URL(fileURLWithPath: "/usr/bin/curl")
        process.arguments = ["-sN", "-D", "/dev/stderr"] + headers.flatMap { ["-H", $0] } + [url]
        let out = Pipe(), err = Pipe()
        process.standardOutput = out
        process.standardError = err
        try process.run()
        drainOnThread(out.fileHandleForReading) { [weak self] data in
            self?.received.withLock { $0.append(String(decoding: data, as: UTF8.self)) }
        }
        drainOnThread(err.fileHandleForReading) { [weak self] data in
            self?.head.withLock { $0 += String(decoding: data, as: UTF8.self) }
        }
    }

    var text: String { received.withLock { $0.joined() } }
    var responseHead: String { head.withLock { $0 } }

    /// The `data:` of every `event: job`, parsed.
    var jobs: [[String: Any]] {
        text.components(separatedBy: "\n\n").compactMap { block -> [String: Any]? in
            guard block.contains("event: job"), let line = block.split(separator: "\n").first(where: { $0.hasPrefix("data: ") }) else {
                return nil
            }
            return (try? JSONSerialization.jsonObject(with: Data(line.dropFirst(6).utf8))) as? [String: Any]
        }
    }

    var ids: [String] {
        text.split(separator: "\n").filter { $0.hasPrefix("id: ") }.map { String($0.dropFirst(4)) }
    }

    func until(_ what: String, timeout: TimeInterval = 30, _ condition: () -> Bool) async throws {
        let deadline = Date().addingTimeInterval(timeout)
        while !condition() {
            guard Date() < deadline else {
                throw StreamTimeout(what: what, text: text, head: responseHead, exit: process.isRunning ? nil : process.terminationStatus)
            }
            try await Task.sleep(for: .milliseconds(20))
        }
    }

    /// Hangs up: the client goes away at once (SIGKILL, so no disposition it inherited matters).
    func stop() {
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
    }

    struct StreamTimeout: Error { let what: String; let text: String; let head: String; let exit: Int32? }
}

/// `GET /v1/jobs/{id}/events` on a real server, database and S3.
extension JobTableTests {
    @Suite struct EventStreamLiveTests {
        static let origin = "http://localhost:5173"

        static func uploadJob(_ setup: JobsLiveSetup, size: Int) async throws -> String {
            let created = try await setup.gateway.request(
                "POST", "/v1/jobs", token: setup.token,
                json: ["type": "upload", "accessLevel": "private", "key": "\(setup.folder)/f.bin", "size": size])
            return try #require(created.json["id"] as? String, "\(created.json)")
        }

        /// A stream opened on a waiting upload job sees it wait, its bytes arrive part by part (and
        /// within a part), its end, and then the stream ends by itself.
        @Test func aStreamSeesProgressAndItsEnd() async throws {
            let setup = try await JobsLiveSetup.start(folderPrefix: "events")
            let size = 12 << 20
            let id = try await Self.uploadJob(setup, size: size)
            let stream = try StreamReader(
                "http://127.0.0.1:\(setup.gateway.port)/v1/jobs/\(id)/events",
                headers: ["Authorization: Bearer \(setup.token)"])
            try await stream.until("the first event") { !stream.jobs.isEmpty }
            #expect(stream.jobs.first?["state"] as? String == "pending")
            #expect(stream.responseHead.lowercased().contains("content-type: text/event-stream"))
            let file = FileManager.default.temporaryDirectory.appendingPathComponent("events-\(UUID().uuidString)")
            try Data(repeating: 9, count: size).write(to: file)
            defer { try? FileManager.default.removeItem(at: file) }
            let sent = try curl([
                "-X", "PUT", "-T", file.path, "--limit-rate", "3M", "-H", "Authorization: Bearer \(setup.token)",
                "http://127.0.0.1:\(setup.gateway.port)/v1/jobs/\(id)/data",
            ])
            #expect(sent.status == 200, "\(sent.body)")
            try await stream.until("the stream to end after the final state", timeout: 15) { !stream.process.isRunning }
            let jobs = stream.jobs
            let transferred = jobs.compactMap { $0["bytesTransferred"] as? Int }
            #expect(jobs.last?["state"] as? String == "completed")
            #expect(transferred == transferred.sorted(), "progress went backwards: \(transferred)")
            #expect(transferred.contains { $0 > 0 && $0 < size }, "no progress between start and end: \(transferred)")
            #expect(transferred.contains { $0 % (5 << 20) != 0 }, "no progress inside a part: \(transferred)")
            let ids = stream.ids.compactMap(Int.init)
            #expect(ids == ids.sorted() && Set(ids).count == ids.count && ids.count == jobs.count)
            await setup.stop()
        }

        /// `Last-Event-ID` resumes: after the final state it says stop (204); from an older event,
        /// the final state comes at once and the stream ends.
        @Test func lastEventIDResumesWithoutAGap() async throws {
            let setup = try await JobsLiveSetup.start(folderPrefix: "events")
            let id = try await Self.uploadJob(setup, size: 5)
            let first = try await setup.gateway.request("GET", "/v1/jobs/\(id)", token: setup.token)
            let etag = first.headers.first { ($0.key as? String)?.lowercased() == "etag" }?.value as? String
            let pendingVersion = try #require(etag?.trimmingCharacters(in: CharacterSet(charactersIn: "\"")))
            let put = try await setup.gateway.request(
                "PUT", "/v1/jobs/\(id)/data", token: setup.token, rawBody: Data("hello".utf8),
                headers: ["Content-Type": "application/octet-stream"])
            #expect(put.status == 200)
            var state = ""
            let deadline = Date().addingTimeInterval(30)
            while state != "completed" && Date() < deadline {
                state = try await setup.gateway.request("GET", "/v1/jobs/\(id)?wait=5", token: setup.token).json["state"] as? String ?? ""
            }
            #expect(state == "completed")
            let resumed = try StreamReader(
                "http://127.0.0.1:\(setup.gateway.port)/v1/jobs/\(id)/events",
                headers: ["Authorization: Bearer \(setup.token)", "Last-Event-ID: \(pendingVersion)"])
            try await resumed.until("the resumed stream to end", timeout: 10) { !resumed.process.isRunning }
            #expect(resumed.jobs.count == 1 && resumed.jobs.first?["state"] as? String == "completed")
            let finalID = try #require(resumed.ids.last)
            let over = try curl([
                "-H", "Authorization: Bearer \(setup.token)", "-H", "Last-Event-ID: \(finalID)",
                "http://127.0.0.1:\(setup.gateway.port)/v1/jobs/\(id)/events",
            ])
            #expect(over.status == 204)
            await setup.stop()
        }

        /// Streams count against GATEWAY_USER_MAX_WAITS; a client that hangs up gives its slot back.
        @Test func aClientThatHangsUpFreesItsSlot() async throws {
            let setup = try await JobsLiveSetup.start(folderPrefix: "events") { $0.userMaxWaits = 2 }
            let id = try await Self.uploadJob(setup, size: 100)
            let url = "http://127.0.0.1:\(setup.gateway.port)/v1/jobs/\(id)/events"
            let one = try StreamReader(url, headers: ["Authorization: Bearer \(setup.token)"])
            let two = try StreamReader(url, headers: ["Authorization: Bearer \(setup.token)"])
            try await one.until("the first stream") { !one.jobs.isEmpty }
            try await two.until("the second stream") { !two.jobs.isEmpty }
            let third = try curl(["-H", "Authorization: Bearer \(setup.token)", "-m", "2", url])
            #expect(third.status == 429, "\(third.body)")
            one.stop()
            let deadline = Date().addingTimeInterval(5)
            var status = 429
            while status == 429 && Date() < deadline {
                status = try curl(["-H", "Authorization: Bearer \(setup.token)", "-m", "1", "-o", "/dev/null", url]).status
            }
            // curl's -m ends a stream that opened: status 200 and the time limit.
            #expect(status == 200, "the slot of the client that hung up was not given back")
            two.stop()
            await setup.stop()
        }

        /// A browser's EventSource sends no header: the job's `eventsUrl` opens the stream, with
        /// CORS for an allowed origin; a dataUrl's signature does not open it.
        @Test func theEventsUrlOpensTheStreamWithoutAHeader() async throws {
            let setup = try await JobsLiveSetup.start(folderPrefix: "events") { $0.corsOrigins = [Self.origin] }
            let id = try await Self.uploadJob(setup, size: 100)
            let job = try await setup.gateway.request("GET", "/v1/jobs/\(id)", token: setup.token)
            let link = try #require(job.json["eventsUrl"] as? String)
            #expect(link.hasPrefix("http://127.0.0.1:\(setup.gateway.port)/v1/jobs/\(id)/events?expires="))
            let stream = try StreamReader(link, headers: ["Origin: \(Self.origin)"])
            try await stream.until("the first event") { !stream.jobs.isEmpty }
            #expect(stream.responseHead.lowercased().contains("access-control-allow-origin: \(Self.origin)"))
            stream.stop()
            let forged = link.replacingOccurrences(of: "signature=", with: "signature=0")
            #expect(try curl(["-o", "/dev/null", forged]).status == 403)
            #expect(try curl(["-o", "/dev/null", "http://127.0.0.1:\(setup.gateway.port)/v1/jobs/\(id)/events"]).status == 401)
            await setup.stop()
        }
    }
}

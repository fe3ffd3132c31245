import Auth
import Crypto
import Dispatch
import Foundation
import S3
import Synchronization
import TestSupport
import Testing

@testable import Adapters
@testable import Gateway
@testable import TransferGateway

/// SIGTERM to instance A while it runs copy jobs and serves a load of kept-alive
/// requests. Every request A had read before the signal (long polls, slow presign bodies, an
/// upload whose body is still arriving, a download whose body is still leaving) gets a whole
/// answer within `GATEWAY_SHUTDOWN_GRACE`; new connections are refused once the listener
/// closes; A exits 0; A's leases are released at once, so B (30 s leases) takes every job in
/// well under a lease; every job completes byte-identical and no multipart upload is left.
extension JobTableTests {
    @Suite struct SigtermUnderLoadLiveTests {
        typealias GatewayProcess = CrashResumeLiveTests.GatewayProcess
        let scale = ScaleOutLiveTests()
        static let grace = 10.0

        /// How one request ended, seen from its client.
        struct Outcome: Sendable {
            let kind: String
            var sent = Date()
            var finished = Date()
            /// No whole answer: refused, reset, closed or cut.
            var failure: LoopbackClient.Failure?
            /// A whole answer, but not the expected one; or the request could not be set up.
            var problem: String?
            var ok: Bool { failure == nil && problem == nil }
        }

        /// Holds the request threads until the signal has been sent; counts those ready for it.
        final class Gate: Sendable {
            private let group = DispatchGroup()
            private let isOpen = Mutex(false)
            let ready = Atomic<Int>(0)
            init() { group.enter() }
            func arrive() {
                ready.add(1, ordering: .relaxed)
                group.wait()
            }
            func open() {
                if isOpen.withLock({ o in
                    defer { o = true }; return !o
                }) {
                    group.leave()
                }
            }
        }

        struct SetupFailed: Error { let reason: String }

        @Test func sigtermUnderLoadFinishesRequestsAndHandsJobsBackAtOnce() async throws {
            let s = try await scale.setup()
            let folder = "termload-\(UUID().uuidString)"
            let copySource = try await scale.source(s, folder, mebibytes: 40)
            let downloadBytes = repeatingBytes(16 << 20, seed: 0, multiplier: 2_654_435_761 >> 13)
            _ = try await s.client.putObject(key: "private/alice/\(folder)/dl.bin", body: .bytes(downloadBytes))
            let uploadBytes = repeatingBytes(12 << 20, seed: 0, multiplier: 40_503 >> 7)
            var environment = s.environment
            environment["GATEWAY_SHUTDOWN_GRACE"] = String(Int(Self.grace))
            // 30 s leases: a takeover sooner than that can only come from A releasing them.
            let a = try GatewayProcess(environment: environment, leaseSeconds: 30)

            // A prepares a download (served from the spool later) and runs every copy job alone.
            let download = try await job(s, a.port, ["type": "download", "source": ["accessLevel": "private", "key": "\(folder)/dl.bin"]])
            #expect(try await scale.finalJob(s, port: a.port, download)["state"] as? String == "completed")
            let upload = try await job(
                s, a.port, ["type": "upload", "accessLevel": "private", "key": "\(folder)/up.bin", "size": uploadBytes.count])
            let idle = try await job(s, a.port, ["type": "upload", "accessLevel": "private", "key": "\(folder)/idle.bin", "size": 1])
            var copies: [String] = []
            for n in 0..<3 {
                // 4 MiB/s paces a part start every 1.25 s: 8 parts take ~10 s, so the signal lands mid-job.
                copies.append(
                    try await job(
                        s, a.port,
                        [
                            "type": "copy", "concurrency": 1, "bandwidthLimit": 4 << 20,
                            "source": ["accessLevel": "private", "key": "\(folder)/src.bin"],
                            "destination": ["accessLevel": "private", "key": "\(folder)/dst-\(n).bin"],
                        ]))
            }
            var owners: [String?] = []
            #expect(
                try await scale.waitUntil(30) {
                    var all = true
                    owners = []
                    for id in copies {
                        let l = try await scale.lease(s, id); owners.append(l.owner); all = all && a.owns(l.owner) && l.parts >= 1
                    }
                    return all
                },
                "A never ran every copy job (another gateway on this database?): leases \(owners), A is pid \(a.process.processIdentifier)")
            let b = try GatewayProcess(environment: environment, leaseSeconds: 30)

            // The load: requests A reads before the signal and answers after it, and kept-alive loops.
            let gate = Gate()
            defer { gate.open() }
            let until = Date().addingTimeInterval(60)
            let (port, token) = (a.port, s.token)
            var held: [Task<Outcome, Never>] = []
            for n in 0..<16 {
                held.append(
                    Task {
                        await onThread {
                            Self.longPoll(port: port, token: token, job: idle, conditional: n % 2 == 1, gate: gate, until: until)
                        }
                    })
            }
            let presign = Array(#"{"operation":"get","accessLevel":"private","key":"\#(folder)/src.bin"}"#.utf8)
            for _ in 0..<6 {
                held.append(Task { await onThread { Self.slowPresign(port: port, token: token, body: presign, gate: gate, until: until) } })
            }
            held.append(
                Task {
                    await onThread { Self.slowUpload(port: port, token: token, job: upload, bytes: uploadBytes, gate: gate, until: until) }
                })
            held.append(
                Task {
                    await onThread {
                        Self.slowDownload(port: port, token: token, job: download, expected: downloadBytes, gate: gate, until: until)
                    }
                })
            let loopRequests = [
                Self.head("GET", "/healthz", token: token),
                Self.head("POST", "/v1/presign", token: token, length: presign.count, headers: ["Content-Type: application/json"])
                    + presign,
                Self.head("GET", "/v1/jobs/\(copies[0])?wait=1", token: token),
            ]
            var loops: [Task<[Outcome], Never>] = []
            for _ in 0..<8 {
                loops.append(Task { await onThread { Self.loop(port: port, requests: loopRequests, gate: gate, until: until) } })
            }
            let expected = held.count + loops.count
            guard try await scale.waitUntil(30, { gate.ready.load(ordering: .relaxed) == expected }) else {
                gate.open()
                a.kill()
                var stuck: [String] = []
                for task in held {
                    let o = await task.value;
                    if !o.ok { stuck.append("\(o.kind): \(o.failure.map(String.init(describing:)) ?? o.problem ?? "")") }
                }
                for task in loops {
                    if let o = await task.value.last, !o.ok {
                        stuck.append("load: \(o.failure.map(String.init(describing:)) ?? o.problem ?? "")")
                    }
                }
                Issue.record("the load never got going: \(stuck)")
                return
            }
            for id in copies {
                let l = try await scale.lease(s, id)
                try #require(a.owns(l.owner) && l.state == "running" && l.parts < 8, "a copy job is no longer running on A: \(l)")
            }

            let signalled = Date()
            a.signal(SIGTERM)
            gate.open()
            let prober = Task {
                await onThread { Self.probeNewConnections(port: port, since: signalled, until: signalled.addingTimeInterval(Self.grace)) }
            }
            // Polled together: when no job is A's any more, when B holds every one, when A has exited.
            var released: Double?, handover: Double?, exited: Double?
            while (handover == nil || exited == nil) && Date().timeIntervalSince(signalled) < Self.grace + 5 {
                owners = []
                for id in copies { owners.append(try await scale.lease(s, id).owner) }
                let now = Date().timeIntervalSince(signalled)
                if released == nil && !owners.contains(where: a.owns) { released = now }
                if handover == nil && owners.allSatisfy(b.owns) { handover = now }
                if exited == nil && !a.process.isRunning { exited = now }
                try await Task.sleep(for: .milliseconds(20))
            }
            var outcomes: [Outcome] = []
            for task in held { outcomes.append(await task.value) }
            var load: [Outcome] = []
            for task in loops { load += await task.value }
            let (probes, refusedAfter) = await prober.value

            // Requests A had read: every one answered whole, within the grace.
            let inFlight = outcomes + load.filter { $0.sent < signalled && $0.finished > signalled && $0.ok }
            let completed = inFlight.filter { $0.ok && $0.finished.timeIntervalSince(signalled) < Self.grace }
            for o in outcomes where !o.ok { Issue.record("\(o.kind): \(o.failure.map(String.init(describing:)) ?? o.problem ?? "")") }
            #expect(
                completed.count == inFlight.count, "\(inFlight.count - completed.count) of \(inFlight.count) not answered within the grace")
            // The loops: nothing cut. A closes a connection idle at the signal, so a request sent on it as A
            // closed it goes unread and unanswered (the client may retry it, RFC 9112 §9.3.1); one sent
            // before the signal is read before A begins to close connections.
            let unread = load.filter { $0.failure?.isUnanswered == true && $0.sent > signalled }
            for o in load where !o.ok && !(o.failure?.isUnanswered == true && o.sent > signalled) {
                Issue.record("load: \(o.failure.map(String.init(describing:)) ?? o.problem ?? "")")
            }
            // New connections after the signal: refused once the listener closes; any answered before that is whole.
            #expect(refusedAfter.map { $0 < 2 } == true, "new connections still accepted \(refusedAfter ?? -1) s after the signal")
            for o in probes where !o.ok && o.failure?.isUnanswered != true {
                Issue.record("new connection: \(o.failure.map(String.init(describing:)) ?? o.problem ?? "")")
            }
            try #require(exited != nil, "A did not exit")
            #expect(a.process.terminationStatus == 0, "SIGTERM is a clean exit")
            #expect(exited.map { $0 < Self.grace } == true, "A took \(f(exited)) s to exit; the grace is \(Self.grace) s")
            #expect(
                released.map { $0 < 5 } == true && handover.map { $0 < 5 } == true,
                "leases released after \(f(released)) s, B held every job after \(f(handover)) s (the lease is 30 s); owners \(owners), A is pid \(a.process.processIdentifier), B \(b.process.processIdentifier)"
            )

            // Every job completes on B, byte-identical, claimed twice (A, then B), no upload left open.
            var identical = 0
            for (n, id) in copies.enumerated() {
                let final = try await scale.finalJob(s, port: b.port, id)
                #expect(final["state"] as? String == "completed" && final["attempts"] as? Int == 2, "\(final)")
                let copied = try await s.client.getObject(key: "private/alice/\(folder)/dst-\(n).bin", sink: .memory(limit: 64 << 20)).body
                if Digest.sha256(copied) == Digest.sha256(copySource) { identical += 1 }
            }
            let uploaded = try await s.client.getObject(key: "private/alice/\(folder)/up.bin", sink: .memory(limit: 64 << 20)).body
            if Digest.sha256(uploaded) == Digest.sha256(uploadBytes) { identical += 1 }
            #expect(identical == copies.count + 1)
            _ = try await HTTP.json("POST", port: b.port, path: "/v1/jobs/\(idle)/cancel", token: s.token, body: nil)
            let leaked = try await s.client.listMultipartUploads(prefix: "private/alice/\(folder)/").count
            #expect(leaked == 0)
            b.kill()
            print(
                "sigterm under load: \(inFlight.count) requests in flight (\(outcomes.count) held, \(inFlight.count - outcomes.count) from \(loops.count) kept-alive loops), "
                    + "\(completed.count) completed, \(unread.count) unread closed; new connections refused after \(f(refusedAfter)) s "
                    + "(\(probes.count) answered before); leases released \(f(released)) s, handover \(f(handover)) s; A exited "
                    + "\(a.process.terminationStatus) after \(f(exited)) s (grace \(Int(Self.grace)) s); jobs \(identical)/\(copies.count + 1) byte-identical, uploads leaked \(leaked)"
            )
        }

        func f(_ seconds: Double?) -> String { seconds.map { String(format: "%.2f", $0) } ?? "never" }

        func job(_ s: ScaleOutLiveTests.Setup, _ port: Int, _ body: [String: Any]) async throws -> String {
            let created = try await HTTP.json("POST", port: port, path: "/v1/jobs", token: s.token, body: body)
            return try #require(created["id"] as? String, "\(created)")
        }

        // MARK: clients, each on a thread of its own (they block on sockets)

        static func head(_ method: String, _ target: String, token: String?, length: Int? = nil, headers: [String] = []) -> [UInt8] {
            var text = "\(method) \(target) HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            if let token { text += "Authorization: Bearer \(token)\r\n" }
            for header in headers { text += header + "\r\n" }
            if let length { text += "Content-Length: \(length)\r\n" }
            return Array((text + "\r\n").utf8)
        }

        /// A kept-alive connection that has answered `opening` (and its answer's head).
        static func keptAlive(
            port: Int, receiveBuffer: Int32? = nil, opening: [UInt8], until: Date
        ) throws -> (LoopbackClient, LoopbackClient.Head) {
            let connection = try LoopbackClient(port: port, receiveBuffer: receiveBuffer)
            try connection.send(opening)
            let (head, _) = try connection.readResponse(deadline: until)
            guard head.status == 200, !head.closes else { throw SetupFailed(reason: "opening answer \(head.status)") }
            return (connection, head)
        }

        /// Waits until the gateway has read every byte sent on `connection`: it has the request.
        static func awaitRead(_ connection: LoopbackClient, port: Int) throws {
            let deadline = Date().addingTimeInterval(10)
            while unreadByServer(serverPort: port, clientPort: connection.localPort) != 0 {
                guard Date() < deadline else { throw SetupFailed(reason: "the gateway never read the request") }
                usleep(2_000)
            }
        }

        /// Runs `body`, turning a failure into the outcome's failure or problem.
        static func outcome(_ kind: String, _ body: (inout Outcome) throws -> Void) -> Outcome {
            var o = Outcome(kind: kind)
            do {
                try body(&o)
            } catch let failure as LoopbackClient.Failure {
                o.failure = failure
            } catch {
                o.problem = (error as? SetupFailed)?.reason ?? "\(error)"
            }
            o.finished = Date()
            return o
        }

        /// `GET /v1/jobs/{id}?wait=30` on a job that does not change: held far past the grace unless the
        /// gateway answers long polls when it shuts down (200, or 304 to `If-None-Match`).
        static func longPoll(port: Int, token: String, job: String, conditional: Bool, gate: Gate, until: Date) -> Outcome {
            outcome(conditional ? "long poll (If-None-Match)" : "long poll") { o in
                let (connection, opened) = try keptAlive(port: port, opening: head("GET", "/v1/jobs/\(job)", token: token), until: until)
                let etag = opened.headers["etag"] ?? ""
                try connection.send(
                    head("GET", "/v1/jobs/\(job)?wait=30", token: token, headers: conditional ? ["If-None-Match: \(etag)"] : []))
                try awaitRead(connection, port: port)
                gate.arrive()
                let (answer, body) = try connection.readResponse(deadline: until)
                let state = (try? JSONSerialization.jsonObject(with: Data(body))) as? [String: Any]
                if conditional ? answer.status != 304 : (answer.status != 200 || state?["state"] as? String != "pending") {
                    o.problem = "answered \(answer.status) \(String(decoding: body, as: UTF8.self))"
                }
            }
        }

        /// `POST /v1/presign` whose body is half sent before the signal and the rest after it.
        static func slowPresign(port: Int, token: String, body: [UInt8], gate: Gate, until: Date) -> Outcome {
            outcome("presign, body half sent") { o in
                let (connection, _) = try keptAlive(port: port, opening: head("GET", "/healthz", token: token), until: until)
                try connection.send(
                    head("POST", "/v1/presign", token: token, length: body.count, headers: ["Content-Type: application/json"])
                        + body.prefix(body.count / 2))
                try awaitRead(connection, port: port)
                gate.arrive()
                try connection.send(body.dropFirst(body.count / 2))
                let (answer, text) = try connection.readResponse(deadline: until)
                if answer.status != 200 || !String(decoding: text, as: UTF8.self).contains(#""url""#) {
                    o.problem = "answered \(answer.status)"
                }
            }
        }

        /// `PUT /v1/jobs/{id}/data` with half the body sent before the signal; the rest goes out in
        /// 256 KiB pieces every 50 ms after it, so A is still reading the body while it drains.
        static func slowUpload(port: Int, token: String, job: String, bytes: [UInt8], gate: Gate, until: Date) -> Outcome {
            outcome("upload, body half sent") { o in
                let (connection, _) = try keptAlive(port: port, opening: head("GET", "/healthz", token: token), until: until)
                let half = bytes.count / 2
                try connection.send(
                    head(
                        "PUT", "/v1/jobs/\(job)/data", token: token, length: bytes.count,
                        headers: ["Content-Type: application/octet-stream"]) + bytes[..<half])
                try awaitRead(connection, port: port)
                gate.arrive()
                for start in stride(from: half, to: bytes.count, by: 256 << 10) {
                    try connection.send(bytes[start..<min(bytes.count, start + (256 << 10))])
                    usleep(50_000)
                }
                let (answer, text) = try connection.readResponse(deadline: until)
                if answer.status != 200 || !String(decoding: text, as: UTF8.self).contains(#""state":"completed""#) {
                    o.problem = "answered \(answer.status) \(String(decoding: text, as: UTF8.self))"
                }
            }
        }

        /// `GET /v1/jobs/{id}/data` of 16 MiB read through a 64 KiB receive buffer: 1 MiB before the
        /// signal (the rest cannot all be in the kernel's buffers yet), the rest at 10 MiB/s after it.
        static func slowDownload(port: Int, token: String, job: String, expected: [UInt8], gate: Gate, until: Date) -> Outcome {
            outcome("download, body mid-transfer") { o in
                let (connection, _) = try keptAlive(
                    port: port, receiveBuffer: 64 << 10, opening: head("GET", "/healthz", token: token), until: until)
                try connection.send(head("GET", "/v1/jobs/\(job)/data", token: token))
                let answer = try connection.readHead(deadline: until)
                guard answer.status == 200, answer.length == expected.count else {
                    throw SetupFailed(reason: "download answered \(answer.status)")
                }
                var body: [UInt8] = []
                while body.count < 1 << 20 { body += try connection.readBody(upTo: (1 << 20) - body.count, deadline: until) }
                gate.arrive()
                var paced = body.count
                while body.count < expected.count {
                    body += try connection.readBody(upTo: expected.count - body.count, deadline: until)
                    if body.count - paced >= 512 << 10 {
                        paced = body.count
                        usleep(50_000)
                    }
                }
                if Digest.sha256(body) != Digest.sha256(expected) { o.problem = "the body differs from the object" }
            }
        }

        /// One kept-alive connection sending `requests` in turn until A says `Connection: close`.
        static func loop(port: Int, requests: [[UInt8]], gate: Gate, until: Date) -> [Outcome] {
            guard let connection = try? LoopbackClient(port: port) else { return [Outcome(kind: "load", problem: "no connection")] }
            var outcomes: [Outcome] = []
            var closes = false
            while !closes && outcomes.last?.ok != false && Date() < until {
                let next = requests[outcomes.count % requests.count]
                outcomes.append(
                    outcome("load") { o in
                        try connection.send(next)
                        let (answer, _) = try connection.readResponse(deadline: until)
                        if answer.status != 200 { o.problem = "answered \(answer.status)" }
                        closes = answer.closes
                    })
                if outcomes.count == requests.count { gate.ready.add(1, ordering: .relaxed) }
            }
            return outcomes
        }

        /// New connections from the signal on, each asking for /healthz, until one is refused.
        /// Returns every attempt that was not refused and when the first refusal came.
        static func probeNewConnections(port: Int, since started: Date, until: Date) -> ([Outcome], Double?) {
            var answered: [Outcome] = []
            while Date() < until {
                let o = outcome("new connection") { o in
                    let connection = try LoopbackClient(port: port)
                    try connection.send(head("GET", "/healthz", token: nil))
                    let (answer, _) = try connection.readResponse(deadline: until)
                    if answer.status != 200 { o.problem = "answered \(answer.status)" }
                }
                if o.failure == .refused { return (answered, Date().timeIntervalSince(started)) }
                answered.append(o)
                usleep(5_000)
            }
            return (answered, nil)
        }
    }
}

/// Runs blocking work on a thread of its own, off the cooperative pool.
func onThread<T: Sendable>(_ work: @escaping @Sendable () -> T) async -> T {
    await withCheckedContinuation { continuation in
        Thread { continuation.resume(returning: work()) }.start()
    }
}

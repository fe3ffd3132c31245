import Foundation
import S3
import Testing

@testable import TransferGateway

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Completion is one-way: a cancel racing the write of a job's object, and an abort racing a
/// client upload's completion, each run hundreds of times against the real PostgreSQL and
/// SeaweedFS. Whatever wins, the API never reports what did not happen: a job answered
/// `canceled` left the old object in place, a job whose object was written ends `completed`.
extension JobTableTests {
    @Suite struct CompletionRaceLiveTests {
        static let rounds = Int(ProcessInfo.processInfo.environment["RACE_ROUNDS"] ?? "") ?? 200
        static let together = 10

        /// Rounds create jobs faster than an identity may (`GATEWAY_USER_RATE`): not what is tested here.
        static func unlimited(_ c: inout Configuration) {
            c.userRate = 1_000_000
            c.userMaxActiveJobs = 1_000_000
            c.userMaxOpenUploads = 1_000_000
        }

        /// The destination's bytes now, nil when absent.
        static func content(_ client: S3Client, _ key: String) async throws -> [UInt8]? {
            do {
                return try await client.getObject(key: key).body
            } catch let error as S3Error where error.code == "NoSuchKey" || error.status == 404 {
                return nil
            }
        }

        /// The state a cancel answered with, or its problem's code.
        static func answered(_ cancel: LiveGateway.Answer) -> String {
            cancel.status == 200 ? cancel.json["state"] as? String ?? "?" : (cancel.json["code"] as? String ?? "\(cancel.status)")
        }

        /// Waits for the job's final state.
        static func final(_ s: JobsLiveSetup, _ id: String) async throws -> String {
            var state = ""
            let deadline = Date().addingTimeInterval(60)
            while !["completed", "failed", "canceled"].contains(state) && Date() < deadline {
                state = try await s.gateway.request("GET", "/v1/jobs/\(id)?wait=10", token: s.token).json["state"] as? String ?? ""
            }
            return state
        }

        /// What a cancel answered, the job's end and the object agree: 200 `canceled` means the old
        /// bytes; 409 `job_completing` or a completed job means the new ones.
        static func check(
            _ answered: String, final: String, object: [UInt8]?, old: [UInt8], new: [UInt8],
            counts: inout [String: Int]
        ) {
            counts[answered, default: 0] += 1
            switch answered {
            case "canceled":
                #expect(
                    final == "canceled" && object == old,
                    "cancel answered canceled, the job ended \(final), the object is \(object == new ? "new" : "old")")
            case "job_completing", "completed":
                #expect(final == "completed" && object == new, "cancel answered \(answered), the job ended \(final)")
            default:
                Issue.record("cancel answered \(answered)")
            }
        }

        /// An upload job's last bytes (one PutObject) against a cancel, 200 times.
        @Test func cancelRacingAnUploadJobsCompletion() async throws {
            let s = try await JobsLiveSetup.start(folderPrefix: "race-upload", tweak: Self.unlimited)
            let old = [UInt8]("old version of the object".utf8), new = [UInt8]("new bytes, seventeen".utf8)
            var counts: [String: Int] = [:]
            for batch in 0..<(Self.rounds / Self.together) {
                let results = try await withThrowingTaskGroup(of: (String, String, [UInt8]?).self) { group in
                    for n in 0..<Self.together {
                        group.addTask {
                            let key = "\(s.folder)/u-\(batch)-\(n).bin"
                            _ = try await s.client.putObject(key: "\(s.prefix)/u-\(batch)-\(n).bin", body: .bytes(old))
                            let created = try await s.gateway.request(
                                "POST", "/v1/jobs", token: s.token,
                                json: [
                                    "type": "upload", "accessLevel": "private", "key": key, "size": new.count,
                                ])
                            let id = try #require(created.json["id"] as? String, "\(created.json)")
                            async let put = s.gateway.request("PUT", "/v1/jobs/\(id)/data", token: s.token, rawBody: Data(new))
                            try await Task.sleep(for: .microseconds(Int.random(in: 0...3000)))
                            let cancel = try await s.gateway.request("POST", "/v1/jobs/\(id)/cancel", token: s.token)
                            _ = try await put
                            let final = try await Self.final(s, id)
                            return (Self.answered(cancel), final, try await Self.content(s.client, "\(s.prefix)/u-\(batch)-\(n).bin"))
                        }
                    }
                    return try await group.reduce(into: []) { $0.append($1) }
                }
                for (cancel, final, object) in results {
                    Self.check(cancel, final: final, object: object, old: old, new: new, counts: &counts)
                }
            }
            print("upload job vs cancel, \(Self.rounds) rounds: \(counts)")
            await s.stop()
        }

        /// A copy's and an import's one write (CopyObject; PutObject of the fetched bytes) against
        /// a cancel, 200 times each.
        @Test(arguments: ["copy", "import"])
        func cancelRacingAServerSideJobsCompletion(_ type: String) async throws {
            let s = try await JobsLiveSetup.start(folderPrefix: "race-\(type)", allowLoopback: true) {
                Self.unlimited(&$0)
                $0.workers = 16
            }
            let old = [UInt8]("the destination before".utf8), new = [UInt8]("the source, copied in".utf8)
            let sourceKey = "\(s.prefix)/source.bin"
            _ = try await s.client.putObject(key: sourceKey, body: .bytes(new))
            let url = s.client.presignedURL(method: "GET", key: sourceKey, expires: 3600)
            var counts: [String: Int] = [:]
            for batch in 0..<(Self.rounds / Self.together) {
                let results = try await withThrowingTaskGroup(of: (String, String, [UInt8]?).self) { group in
                    for n in 0..<Self.together {
                        group.addTask {
                            let name = "d-\(batch)-\(n).bin"
                            _ = try await s.client.putObject(key: "\(s.prefix)/\(name)", body: .bytes(old))
                            let body: [String: Any] =
                                type == "copy"
                                ? [
                                    "type": "copy", "source": ["accessLevel": "private", "key": "\(s.folder)/source.bin"],
                                    "destination": ["accessLevel": "private", "key": "\(s.folder)/\(name)"],
                                ]
                                : ["type": "import", "sourceUrl": url, "accessLevel": "private", "key": "\(s.folder)/\(name)"]
                            let created = try await s.gateway.request("POST", "/v1/jobs", token: s.token, json: body)
                            let id = try #require(created.json["id"] as? String, "\(created.json)")
                            // Around the worker's next claim (it polls every 250 ms) and the write after it.
                            try await Task.sleep(for: .milliseconds(Int.random(in: 0...400)))
                            let cancel = try await s.gateway.request("POST", "/v1/jobs/\(id)/cancel", token: s.token)
                            let final = try await Self.final(s, id)
                            return (Self.answered(cancel), final, try await Self.content(s.client, "\(s.prefix)/\(name)"))
                        }
                    }
                    return try await group.reduce(into: []) { $0.append($1) }
                }
                for (cancel, final, object) in results {
                    Self.check(cancel, final: final, object: object, old: old, new: new, counts: &counts)
                }
            }
            print("\(type) job vs cancel, \(Self.rounds) rounds: \(counts)")
            #expect(
                counts["canceled", default: 0] > 0 && counts["completed", default: 0] + counts["job_completing", default: 0] > 0,
                "both sides won some rounds: \(counts)")
            await s.stop()
        }

        /// `DELETE /v1/uploads/{id}` against `POST …/complete`, 200 times: exactly one succeeds, the
        /// other answers 409 `upload_not_open`, and the record ends as the winner says.
        @Test func abortRacingCompleteOnClientUploads() async throws {
            let s = try await JobsLiveSetup.start(folderPrefix: "race-uploads", tweak: Self.unlimited)
            var counts: [String: Int] = [:]
            for batch in 0..<(Self.rounds / Self.together) {
                let results = try await withThrowingTaskGroup(of: (Int, Int, String, [UInt8]?).self) { group in
                    for n in 0..<Self.together {
                        group.addTask {
                            let key = "\(s.folder)/c-\(batch)-\(n).bin"
                            let created = try await s.gateway.request(
                                "POST", "/v1/uploads", token: s.token,
                                json: [
                                    "accessLevel": "private", "key": key, "size": 5,
                                ])
                            let id = try #require(created.json["uploadId"] as? String, "\(created.json)")
                            let parts = try #require(created.json["parts"] as? [[String: Any]])
                            var put = URLRequest(url: URL(string: try #require(parts.first?["url"] as? String))!)
                            put.httpMethod = "PUT"
                            put.httpBody = Data("hello".utf8)
                            _ = try await URLSession.shared.data(for: put)
                            async let complete = s.gateway.request("POST", "/v1/uploads/\(id)/complete", token: s.token, json: [:])
                            try await Task.sleep(for: .microseconds(Int.random(in: 0...3000)))
                            let abort = try await s.gateway.request("DELETE", "/v1/uploads/\(id)", token: s.token)
                            let completed = try await complete
                            let record = try await s.gateway.request("GET", "/v1/uploads/\(id)", token: s.token)
                            let state = record.status == 404 ? "aborted" : record.json["state"] as? String ?? "?"
                            return (
                                completed.status, abort.status, state, try await Self.content(s.client, "\(s.prefix)/c-\(batch)-\(n).bin")
                            )
                        }
                    }
                    return try await group.reduce(into: []) { $0.append($1) }
                }
                for (complete, abort, state, object) in results {
                    counts["complete \(complete), abort \(abort)", default: 0] += 1
                    if complete == 200 {
                        #expect(abort == 409 && state == "completed" && object == Array("hello".utf8), "\(complete) \(abort) \(state)")
                    } else {
                        // The loser answers 409 `upload_not_open`, or 404 when the abort had ended
                        // before the completion read the upload.
                        #expect(
                            [404, 409].contains(complete) && abort == 204 && state == "aborted" && object == nil,
                            "\(complete) \(abort) \(state)")
                    }
                }
            }
            print("complete vs abort, \(Self.rounds) rounds: \(counts)")
            await s.stop()
        }
    }
}

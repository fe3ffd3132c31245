import Foundation
import TestSupport
import Testing

@testable import Adapters
@testable import Gateway
@testable import TransferGateway

/// Jobs that must not clobber: `preventOverwrite` and `ifMatch` carried to S3 as
/// `If-None-Match: *` and `If-Match` on the write that makes the object, on every path (an
/// upload job's PutObject and multipart completion, a copy's CopyObject and multipart copy).
extension JobTableTests {
    @Suite struct SafeWriteLiveTests {
        /// Two upload jobs racing to one key with `preventOverwrite`: exactly one lands, the
        /// other answers 412 `object_exists` and fails so; the object is the winner's, whole.
        @Test(arguments: [1 << 20, 12 << 20])
        func racingUploadsToOneKeyLandOnce(size: Int) async throws {
            let setup = try await JobsLiveSetup.start(folderPrefix: "safe")
            let key = "\(setup.folder)/race.bin"
            var ids: [String] = []
            for _ in 0..<2 {
                let created = try await setup.gateway.request(
                    "POST", "/v1/jobs", token: setup.token,
                    json: ["type": "upload", "accessLevel": "private", "key": key, "preventOverwrite": true])
                ids.append(try #require(created.json["id"] as? String, "\(created.json)"))
            }
            let bodies = [repeatingBytes(size, seed: 1), repeatingBytes(size, seed: 2)]
            // Status and code of each PUT, by job.
            let jobIDs = ids, gateway = setup.gateway, token = setup.token
            let answers = try await withThrowingTaskGroup(of: (Int, Int, String?).self) { group in
                for index in 0..<2 {
                    group.addTask {
                        let answer = try await gateway.request(
                            "PUT", "/v1/jobs/\(jobIDs[index])/data", token: token, rawBody: Data(bodies[index]),
                            headers: ["Content-Type": "application/octet-stream"])
                        return (index, answer.status, answer.json["code"] as? String)
                    }
                }
                return try await group.reduce(into: [Int: (Int, String?)]()) { $0[$1.0] = ($1.1, $1.2) }
            }
            let statuses = (0..<2).map { answers[$0]?.0 ?? 0 }
            #expect(statuses.sorted() == [200, 412], "\(statuses)")
            let winner = statuses[0] == 200 ? 0 : 1, loser = 1 - winner
            #expect(answers[loser]?.1 == "object_exists", "\(String(describing: answers[loser]))")
            let lost = try await setup.gateway.request("GET", "/v1/jobs/\(ids[loser])", token: setup.token).json
            #expect(lost["state"] as? String == "failed" && (lost["error"] as? [String: Any])?["code"] as? String == "object_exists")
            #expect(
                try await setup.client.getObject(key: "\(setup.prefix)/race.bin", sink: .memory(limit: 64 << 20)).body == bodies[winner])
            await setup.stop()
        }

        /// A copy onto a taken key with `preventOverwrite` fails `object_exists`; with a stale
        /// `ifMatch`, `precondition_failed`; with the current ETag it replaces the object. One part
        /// (CopyObject) and several (UploadPartCopy, then the completion) alike.
        @Test(arguments: [100_000, 11 << 20])
        func copiesHonourTheirConditions(size: Int) async throws {
            let setup = try await JobsLiveSetup.start(folderPrefix: "safe-copy")
            let source = repeatingBytes(size, seed: 3), existing = repeatingBytes(1000, seed: 4)
            _ = try await setup.client.putObject(key: "\(setup.prefix)/src.bin", body: .bytes(source))
            let etag = try await setup.client.putObject(key: "\(setup.prefix)/dst.bin", body: .bytes(existing))
            func copy(_ extra: [String: Any]) async throws -> [String: Any] {
                try await setup.run(
                    [
                        "type": "copy", "source": ["accessLevel": "private", "key": "\(setup.folder)/src.bin"],
                        "destination": ["accessLevel": "private", "key": "\(setup.folder)/dst.bin"], "partSize": 5 << 20,
                    ].merging(extra) { $1 })
            }
            let prevented = try await copy(["preventOverwrite": true])
            #expect((prevented["error"] as? [String: Any])?["code"] as? String == "object_exists", "\(prevented)")
            let stale = try await copy(["ifMatch": "\"0123456789abcdef0123456789abcdef\""])
            #expect((stale["error"] as? [String: Any])?["code"] as? String == "precondition_failed", "\(stale)")
            #expect(try await setup.client.getObject(key: "\(setup.prefix)/dst.bin").body == existing, "nothing was replaced")
            let current = try await copy(["ifMatch": etag])
            #expect(current["state"] as? String == "completed", "\(current)")
            #expect(try await setup.client.getObject(key: "\(setup.prefix)/dst.bin", sink: .memory(limit: 64 << 20)).body == source)
            let both = try await setup.gateway.request(
                "POST", "/v1/jobs", token: setup.token,
                json: [
                    "type": "copy", "source": ["accessLevel": "private", "key": "\(setup.folder)/src.bin"],
                    "destination": ["accessLevel": "private", "key": "\(setup.folder)/x.bin"], "preventOverwrite": true,
                    "ifMatch": etag,
                ])
            #expect(both.status == 400)
            #expect(try await setup.client.listMultipartUploads(prefix: setup.prefix).isEmpty, "no upload left open")
            await setup.stop()
        }
    }
}

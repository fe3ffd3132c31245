import Crypto
import Foundation
import Postgres
import S3
import SigV4
import Testing

@testable import Adapters
@testable import Gateway
@testable import TransferGateway

/// `/v1/jobs` end to end: a gateway in process with its worker, the real PostgreSQL and S3.
extension JobTableTests {
    @Suite struct JobsAPILiveTests {
        @Test func copyJobThroughTheAPI() async throws {
            let gateway = try LiveGateway()
            try await JobTableTests.retireLeftovers(PostgresPoolFor.live())
            gateway.app.worker?.start()
            let alice = gateway.token("alice")
            let bob = gateway.token("bob")
            let folder = "api-\(UUID().uuidString)"
            let c = gateway.configuration
            let client = try c.makeS3Client()
            var bytes = [UInt8](repeating: 7, count: 2 * (5 << 20) + 99)
            bytes[12345] = 1
            _ = try await client.putObject(key: "private/alice/\(folder)/src.bin", body: .bytes(bytes))

            let created = try await gateway.request(
                "POST", "/v1/jobs", token: alice,
                json: [
                    "type": "copy", "concurrency": 2,
                    "source": ["accessLevel": "private", "key": "\(folder)/src.bin"],
                    "destination": ["accessLevel": "private", "key": "\(folder)/dst.bin"],
                ])
            #expect(created.status == 201)
            let id = try #require(created.json["id"] as? String)
            #expect(created.json["state"] as? String == "queued" && created.json["type"] as? String == "copy")
            #expect(created.json["objectKey"] as? String == "private/alice/\(folder)/dst.bin")
            #expect((created.headers["Location"] as? String) == "/v1/jobs/\(id)")

            // Long-poll until the job is final (bounded).
            var job = created.json
            var etag = created.headers["Etag"] as? String ?? created.headers["ETag"] as? String ?? ""
            let deadline = Date().addingTimeInterval(30)
            while !["completed", "failed", "canceled"].contains(job["state"] as? String ?? "") && Date() < deadline {
                let answer = try await gateway.request("GET", "/v1/jobs/\(id)?wait=5", token: alice, headers: ["If-None-Match": etag])
                if answer.status == 200 {
                    job = answer.json
                    etag = answer.headers["Etag"] as? String ?? answer.headers["ETag"] as? String ?? etag
                }
            }
            #expect(job["state"] as? String == "completed", "\(job)")
            #expect(job["bytesTotal"] as? Int == bytes.count && job["bytesCommitted"] as? Int == bytes.count)
            #expect(job["partsTotal"] as? Int == 3 && job["partsCompleted"] as? Int == 3)
            #expect(job["fractionCompleted"] as? Double == 1)
            let copied = try await client.getObject(key: "private/alice/\(folder)/dst.bin", sink: .memory(limit: 32 << 20)).body
            #expect(Digest.sha256(copied) == Digest.sha256(bytes))
            #expect(try await client.listMultipartUploads(prefix: "private/alice/\(folder)/").isEmpty)

            // Not modified, others' view, the list.
            let again = try await gateway.request("GET", "/v1/jobs/\(id)", token: alice, headers: ["If-None-Match": etag])
            #expect(again.status == 304)
            #expect(try await gateway.request("GET", "/v1/jobs/\(id)", token: bob).status == 404)
            let list = try await gateway.request("GET", "/v1/jobs?limit=5", token: alice)
            #expect(((list.json["jobs"] as? [[String: Any]]) ?? []).contains { $0["id"] as? String == id })
            await gateway.app.worker?.stop()
            await gateway.stop()
        }

        /// A paused upload refuses bytes; resumed, it waits for them again (`pending`, not `queued`,
        /// which no worker claims for an upload) and takes them.
        @Test func aResumedUploadTakesItsBytesAgain() async throws {
            let gateway = try LiveGateway()
            let token = gateway.token("alice")
            let created = try await gateway.request(
                "POST", "/v1/jobs", token: token,
                json: [
                    "type": "upload", "accessLevel": "private", "key": "resume-\(UUID().uuidString).txt", "size": 5,
                ])
            let id = try #require(created.json["id"] as? String)
            #expect(try await gateway.request("POST", "/v1/jobs/\(id)/pause", token: token).json["state"] as? String == "paused")
            let refused = try await gateway.request("PUT", "/v1/jobs/\(id)/data", token: token, rawBody: Data("hello".utf8))
            #expect(refused.status == 409, "\(refused.json)")
            #expect(try await gateway.request("POST", "/v1/jobs/\(id)/resume", token: token).json["state"] as? String == "pending")
            let taken = try await gateway.request("PUT", "/v1/jobs/\(id)/data", token: token, rawBody: Data("hello".utf8))
            #expect(taken.status == 200 && taken.json["state"] as? String == "completed", "\(taken.json)")
            await gateway.stop()
        }

        @Test func jobsAreCheckedAtCreation() async throws {
            let gateway = try LiveGateway()
            let bob = gateway.token("bob")
            let denied = try await gateway.request(
                "POST", "/v1/jobs", token: bob,
                json: [
                    "type": "copy", "source": ["accessLevel": "private", "key": "x", "targetIdentityId": "alice"],
                    "destination": ["accessLevel": "private", "key": "y"],
                ])
            #expect(denied.status == 403)
            let negative = try await gateway.request(
                "POST", "/v1/jobs", token: bob,
                json: [
                    "type": "upload", "accessLevel": "private", "key": "u", "size": -1,
                ])
            #expect(negative.status == 400 && negative.json["code"] as? String == "validation_failed")
            let unknown = try await gateway.request("POST", "/v1/jobs", token: bob, json: ["type": "move"])
            #expect(unknown.status == 400 && unknown.json["code"] as? String == "validation_failed")
            let notHTTP = try await gateway.request(
                "POST", "/v1/jobs", token: bob,
                json: [
                    "type": "import", "sourceUrl": "file:///etc/passwd", "accessLevel": "private", "key": "p",
                ])
            #expect(notHTTP.status == 400 && notHTTP.json["code"] as? String == "validation_failed")
            let otherPrivate = try await gateway.request(
                "POST", "/v1/jobs", token: bob,
                json: [
                    "type": "download", "source": ["accessLevel": "private", "key": "x", "targetIdentityId": "alice"],
                ])
            #expect(otherPrivate.status == 403)
            let badOption = try await gateway.request(
                "POST", "/v1/jobs", token: bob,
                json: [
                    "type": "copy", "concurrency": 1000, "source": ["accessLevel": "public", "key": "x"],
                    "destination": ["accessLevel": "public", "key": "y"],
                ])
            #expect(badOption.status == 400 && badOption.json["code"] as? String == "validation_failed")
            #expect(try await gateway.request("GET", "/v1/jobs/not-a-uuid", token: bob).status == 404)
            #expect(try await gateway.request("GET", "/v1/jobs", token: nil).status == 401)
            await gateway.stop()
        }
    }
}

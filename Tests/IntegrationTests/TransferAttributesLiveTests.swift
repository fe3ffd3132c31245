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

/// What a transfer is given, it keeps, against the real PostgreSQL and SeaweedFS: a copy keeps
/// its source's attributes; an object made without a type is `application/octet-stream`; the
/// options accepted are honoured (attributes on presigned PUTs, pacing) and nothing else is
/// accepted; a retried create with its `Idempotency-Key` makes one job.
extension JobTableTests {
    @Suite struct TransferAttributesLiveTests {
        typealias Setup = JobsLiveSetup

        func setup() async throws -> Setup { try await .start(folderPrefix: "attrs") }

        func teardown(_ s: Setup) async { await s.stop() }

        func run(_ s: Setup, _ body: [String: Any]) async throws -> [String: Any] { try await s.run(body) }

        static let attributes = ObjectAttributes(
            contentType: "text/plain", cacheControl: "max-age=60",
            contentDisposition: "inline", metadata: ["owner": "alice", "batch": "7"])

        /// A copy of a `text/plain` object with metadata keeps both, as one CopyObject and as a
        /// multipart copy; options given replace only what they name.
        @Test(arguments: [12, 12 << 20])
        func aCopyKeepsTheSourcesAttributes(size: Int) async throws {
            let s = try await setup()
            _ = try await s.client.putObject(
                key: "\(s.prefix)/src.txt", body: .bytes(repeatingBytes(size, seed: 1)), attributes: Self.attributes)
            let source: [String: Any] = ["accessLevel": "private", "key": "\(s.folder)/src.txt"]
            let plain = try await run(
                s, ["type": "copy", "source": source, "destination": ["accessLevel": "private", "key": "\(s.folder)/a.txt"]])
            #expect(plain["state"] as? String == "completed", "\(plain)")
            let head = try await s.client.headObject(key: "\(s.prefix)/a.txt")
            #expect(head.contentType == "text/plain")
            #expect(head.metadata == ["owner": "alice", "batch": "7"])
            #expect(head.cacheControl == "max-age=60" && head.contentDisposition == "inline")
            let retyped = try await run(
                s,
                [
                    "type": "copy", "source": source, "contentType": "text/markdown",
                    "destination": ["accessLevel": "private", "key": "\(s.folder)/b.txt"],
                ])
            #expect(retyped["state"] as? String == "completed", "\(retyped)")
            let other = try await s.client.headObject(key: "\(s.prefix)/b.txt")
            #expect(other.contentType == "text/markdown")
            #expect(other.metadata == ["owner": "alice", "batch": "7"], "what the options leave alone is kept")
            await teardown(s)
        }

        /// An upload job of 12 MB with no `contentType`, and a multipart copy of it, are both
        /// `application/octet-stream` (not libcurl's form type, not S3's `binary/octet-stream`).
        @Test func objectsMadeWithoutATypeAreOctetStream() async throws {
            let s = try await setup()
            let created = try await s.gateway.request(
                "POST", "/v1/jobs", token: s.token,
                json: [
                    "type": "upload", "accessLevel": "private", "key": "\(s.folder)/up.bin", "size": 12_000_000,
                ])
            let id = try #require(created.json["id"] as? String, "\(created.status) \(created.json)")
            let sent = try await s.gateway.request(
                "PUT", "/v1/jobs/\(id)/data", token: s.token,
                rawBody: Data(repeatingBytes(12_000_000, seed: 2)),
                headers: ["Content-Type": "application/octet-stream"])
            #expect(sent.json["state"] as? String == "completed", "\(sent.json)")
            #expect(try await s.client.headObject(key: "\(s.prefix)/up.bin").contentType == "application/octet-stream")
            let copy = try await run(
                s,
                [
                    "type": "copy", "source": ["accessLevel": "private", "key": "\(s.folder)/up.bin"],
                    "destination": ["accessLevel": "private", "key": "\(s.folder)/copy.bin"], "partSize": 5 << 20,
                ])
            #expect(copy["state"] as? String == "completed" && copy["partsTotal"] as? Int == 3, "\(copy)")
            #expect(try await s.client.headObject(key: "\(s.prefix)/copy.bin").contentType == "application/octet-stream")
            await teardown(s)
        }

        /// The same `Idempotency-Key` twice gives one job (the first answer again); with another
        /// body, 422. Jobs list by type.
        @Test func aRetriedCreateWithItsKeyMakesOneJob() async throws {
            let s = try await setup()
            let key = UUID().uuidString
            let body: [String: Any] = ["type": "upload", "accessLevel": "private", "key": "\(s.folder)/once.bin", "size": 10]
            let first = try await s.gateway.request("POST", "/v1/jobs", token: s.token, json: body, headers: ["Idempotency-Key": key])
            let again = try await s.gateway.request("POST", "/v1/jobs", token: s.token, json: body, headers: ["Idempotency-Key": key])
            #expect(first.status == 201 && again.status == 201, "\(again.status) \(again.json)")
            let id = try #require(first.json["id"] as? String)
            #expect(again.json["id"] as? String == id)
            #expect(again.headers["Idempotent-Replayed"] as? String == "true")
            var changed = body
            changed["size"] = 11
            let reused = try await s.gateway.request("POST", "/v1/jobs", token: s.token, json: changed, headers: ["Idempotency-Key": key])
            #expect(reused.status == 422 && reused.json["code"] as? String == "idempotency_key_reused")
            let otherUser = try await s.gateway.request(
                "POST", "/v1/jobs", token: s.gateway.token("bob"),
                json: [
                    "type": "upload", "accessLevel": "private", "key": "x/once.bin", "size": 10,
                ], headers: ["Idempotency-Key": key])
            #expect(otherUser.status == 201 && otherUser.json["id"] as? String != id, "a key is the identity's own")
            let uploads = try await s.gateway.request("GET", "/v1/jobs?type=upload&state=pending&limit=100", token: s.token)
            let listed = (uploads.json["jobs"] as? [[String: Any]] ?? []).compactMap { $0["id"] as? String }
            #expect(listed.filter { $0 == id }.count == 1)
            let copies = try await s.gateway.request("GET", "/v1/jobs?type=copy&limit=100", token: s.token)
            #expect(!(copies.json["jobs"] as? [[String: Any]] ?? []).contains { $0["id"] as? String == id })
            await teardown(s)
        }

        /// Strict bodies: an unknown field is `unknown_field`, an option the type does not use is
        /// `option_not_supported`, on every create route.
        @Test func bodiesAreStrict() async throws {
            let s = try await setup()
            let unknown = try await s.gateway.request(
                "POST", "/v1/jobs", token: s.token,
                json: [
                    "type": "upload", "accessLevel": "private", "key": "k", "sizee": 1,
                ])
            #expect(unknown.status == 400 && unknown.json["code"] as? String == "unknown_field")
            let unused = try await s.gateway.request(
                "POST", "/v1/jobs", token: s.token,
                json: [
                    "type": "download", "source": ["accessLevel": "private", "key": "k"], "partSize": 5 << 20,
                ])
            #expect(unused.status == 400 && unused.json["code"] as? String == "option_not_supported")
            let nested = try await s.gateway.request(
                "POST", "/v1/jobs", token: s.token,
                json: [
                    "type": "copy", "source": ["accessLevel": "private", "key": "k", "version": "1"],
                    "destination": ["accessLevel": "private", "key": "d"],
                ])
            #expect(nested.status == 400 && nested.json["code"] as? String == "unknown_field")
            let presign = try await s.gateway.request(
                "POST", "/v1/presign", token: s.token,
                json: [
                    "operation": "get", "accessLevel": "private", "key": "k", "cacheControl": "no-cache",
                ])
            #expect(presign.status == 400 && presign.json["code"] as? String == "option_not_supported")
            let uploads = try await s.gateway.request(
                "POST", "/v1/uploads", token: s.token,
                json: [
                    "accessLevel": "private", "key": "k", "size": 1, "color": "red",
                ])
            #expect(uploads.status == 400 && uploads.json["code"] as? String == "unknown_field")
            await teardown(s)
        }

        /// Cache control, disposition, encryption and metadata are signed into a presigned PUT: a
        /// client sending the headers it was given stores them all.
        @Test func aPresignedPutStoresEveryAttributeItSigns() async throws {
            let s = try await setup()
            let answer = try await s.gateway.request(
                "POST", "/v1/presign", token: s.token,
                json: [
                    "operation": "put", "accessLevel": "private", "key": "\(s.folder)/p.txt", "contentType": "text/plain",
                    "cacheControl": "no-cache", "contentDisposition": "attachment", "metadata": ["Origin": "phone"],
                ])
            #expect(answer.status == 200, "\(answer.json)")
            let url = try #require(answer.json["url"] as? String)
            let headers = try #require(answer.json["headers"] as? [String: String])
            #expect(headers["Cache-Control"] == "no-cache" && headers["x-amz-meta-origin"] == "phone")
            let put = try curl(["-X", "PUT", "--data-binary", "hello"] + headers.flatMap { ["-H", "\($0.key): \($0.value)"] } + [url])
            #expect(put.status == 200, "\(put.body)")
            let head = try await s.client.headObject(key: "\(s.prefix)/p.txt")
            #expect(head.contentType == "text/plain" && head.cacheControl == "no-cache" && head.contentDisposition == "attachment")
            #expect(head.metadata["origin"] == "phone")
            await teardown(s)
        }

        /// `bandwidthLimit` is a byte rate: a copy of 6 MiB at 2 MiB/s takes at least 3 s.
        @Test func aCopyKeepsToItsBandwidthLimit() async throws {
            let s = try await setup()
            _ = try await s.client.putObject(key: "\(s.prefix)/six.bin", body: .bytes(repeatingBytes(6 << 20, seed: 3)))
            let started = Date()
            let job = try await run(
                s,
                [
                    "type": "copy", "source": ["accessLevel": "private", "key": "\(s.folder)/six.bin"],
                    "destination": ["accessLevel": "private", "key": "\(s.folder)/six-copy.bin"],
                    "bandwidthLimit": 2 << 20,
                ])
            let took = Date().timeIntervalSince(started)
            #expect(job["state"] as? String == "completed", "\(job)")
            #expect(took >= 2.9, "6 MiB at 2 MiB/s took \(took) s")
            // One CopyObject for a one-part object keeps to it as well.
            _ = try await s.client.putObject(key: "\(s.prefix)/one.bin", body: .bytes(repeatingBytes(1 << 20, seed: 4)))
            let small = Date()
            let one = try await run(
                s,
                [
                    "type": "copy", "source": ["accessLevel": "private", "key": "\(s.folder)/one.bin"],
                    "destination": ["accessLevel": "private", "key": "\(s.folder)/one-copy.bin"],
                    "bandwidthLimit": 512 << 10,
                ])
            #expect(one["state"] as? String == "completed" && Date().timeIntervalSince(small) >= 1.9, "\(one)")
            await teardown(s)
        }

        /// A browser form POST stores the metadata and cache control its policy pins.
        @Test func aFormPostKeepsItsMetadata() async throws {
            let s = try await setup()
            let form = try await s.gateway.request(
                "POST", "/v1/presign/post", token: s.token,
                json: [
                    "accessLevel": "private", "key": "\(s.folder)/form.txt", "contentType": "text/plain", "cacheControl": "max-age=5",
                    "metadata": ["origin": "web"], "maxSize": 1024,
                ])
            #expect(form.status == 200, "\(form.json)")
            let url = try #require(form.json["url"] as? String)
            let fields = try #require(form.json["fields"] as? [String: String])
            var args = ["-F", "key=\(fields["key"] ?? "")"]
            for (name, value) in fields.sorted(by: { $0.key < $1.key }) where name != "key" { args += ["-F", "\(name)=\(value)"] }
            let posted = try curl(args + ["-F", "file=@/etc/hostname", url])
            #expect((200..<300).contains(posted.status), "\(posted)")
            let head = try await s.client.headObject(key: "\(s.prefix)/form.txt")
            #expect(head.metadata["origin"] == "web" && head.cacheControl == "max-age=5" && head.contentType == "text/plain")
            await teardown(s)
        }

        /// Every tus `Upload-Metadata` key but the ones the gateway reads is kept as user metadata
        /// (a value that is not ASCII percent-encoded).
        @Test func tusKeepsEveryMetadataKey() async throws {
            let s = try await setup()
            func b64(_ text: String) -> String { Data(text.utf8).base64EncodedString() }
            let metadata = [
                "key \(b64("\(s.folder)/tus.txt"))", "filename \(b64("résumé.txt"))", "relativePath \(b64("docs/a"))",
                "filetype \(b64("text/plain"))", "accessLevel \(b64("private"))",
            ].joined(separator: ",")
            let created = try await s.gateway.request(
                "POST", "/v1/tus/", token: s.token, rawBody: Data("hello".utf8),
                headers: [
                    "Tus-Resumable": "1.0.0", "Upload-Length": "5", "Upload-Metadata": metadata,
                    "Content-Type": "application/offset+octet-stream",
                ])
            #expect(created.status == 201, "\(created.status)")
            let head = try await s.client.headObject(key: "\(s.prefix)/tus.txt")
            #expect(head.contentType == "text/plain")
            #expect(head.metadata["relativepath"] == "docs/a" && head.metadata["filename"] == "r%C3%A9sum%C3%A9%2Etxt", "\(head.metadata)")
            #expect(head.metadata["accesslevel"] == nil && head.metadata["filetype"] == nil && head.metadata["key"] == nil)
            await teardown(s)
        }

        /// `timeoutSeconds` bounds an upload job too: bytes sent after it are refused and the job
        /// fails `JobTimeout`.
        @Test func anUploadJobKeepsToItsTimeout() async throws {
            let s = try await setup()
            let created = try await s.gateway.request(
                "POST", "/v1/jobs", token: s.token,
                json: [
                    "type": "upload", "accessLevel": "private", "key": "\(s.folder)/late.bin", "size": 5, "timeoutSeconds": 1,
                ])
            let id = try #require(created.json["id"] as? String, "\(created.json)")
            try await Task.sleep(for: .milliseconds(1_100))  // the condition is time itself: the second must pass
            let late = try await s.gateway.request("PUT", "/v1/jobs/\(id)/data", token: s.token, rawBody: Data("hello".utf8))
            #expect(late.status == 409 && late.json["code"] as? String == "job_not_pending", "\(late.status) \(late.json)")
            let job = try await s.gateway.request("GET", "/v1/jobs/\(id)", token: s.token).json
            #expect(job["state"] as? String == "failed" && (job["error"] as? [String: Any])?["code"] as? String == "job_timeout", "\(job)")
            await teardown(s)
        }
    }
}

import Crypto
import Foundation
import S3
import TestSupport
import Testing

@testable import Gateway
@testable import TransferGateway

#if canImport(Glibc)
    import Glibc
#endif

/// Resumable Uploads for HTTP end to end, with scripted clients of interop versions 3 and 6 on
/// raw sockets (URLSession would hide the 104): the upload URL arrives in a 104 before the body
/// goes, the connection is cut at 30 %, `HEAD` gives the offset, `PATCH` sends the rest, and S3
/// holds the same bytes. Uploads are upload jobs, so the jobs API sees them too.
extension JobTableTests {
    @Suite struct ResumableUploadLiveTests {
        /// The two drafts' words: the creation's fields, and those of a completing append.
        struct Dialect: CustomTestStringConvertible, Sendable {
            let version: Int
            var testDescription: String { "interop \(version)" }
            var creation: String {
                version == 3
                    ? "Upload-Draft-Interop-Version: 3\r\nUpload-Incomplete: ?0\r\n"
                    : "Upload-Draft-Interop-Version: 6\r\nUpload-Complete: ?1\r\n"
            }
            var append: String {
                version == 3
                    ? "Upload-Draft-Interop-Version: 3\r\n"
                    : "Upload-Draft-Interop-Version: 6\r\nUpload-Complete: ?1\r\nContent-Type: application/partial-upload\r\n"
            }
            var completenessField: String { version == 3 ? "upload-incomplete" : "upload-complete" }
            func says(complete: Bool) -> String { (version == 3 ? !complete : complete) ? "?1" : "?0" }
        }

        static let dialects = [Dialect(version: 3), Dialect(version: 6)]

        static func bytes(_ count: Int) -> [UInt8] {
            var bytes = [UInt8](repeating: 0, count: count)
            for i in stride(from: 0, to: count, by: 97) { bytes[i] = UInt8(truncatingIfNeeded: i &* 31 >> 7) }
            return bytes
        }

        static func head(_ method: String, _ target: String, port: Int, token: String, _ fields: String, length: Int?) -> String {
            "\(method) \(target) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nAuthorization: Bearer \(token)\r\n" + fields
                + (length.map { "Content-Length: \($0)\r\n" } ?? "") + "\r\n"
        }

        /// The path of the upload URL a 104 or 201 named.
        static func path(_ location: String?, port: Int) throws -> String {
            let text = try #require(location)
            #expect(text.hasPrefix("http://127.0.0.1:\(port)/v1/resumable/"), "an absolute URL on the gateway")
            return String(text[try #require(text.range(of: "/v1/resumable/")).lowerBound...])
        }

        /// `HEAD` of the upload URL on a new connection.
        static func offset(_ path: String, port: Int, token: String, _ dialect: Dialect) throws -> LoopbackClient.Response {
            let client = try LoopbackClient(port: port)
            try client.send(
                head("HEAD", path, port: port, token: token, "Upload-Draft-Interop-Version: \(dialect.version)\r\n", length: nil))
            return try client.readResponse(head: true)
        }

        static func objectDigest(_ gateway: LiveGateway, _ key: String) async throws -> [UInt8] {
            let client = try gateway.configuration.makeS3Client()
            return Digest.sha256(try await client.getObject(key: key, sink: .memory(limit: 64 << 20)).body)
        }

        @Test(arguments: dialects)
        func aCreationCutAt30PercentResumesFromTheOffset(dialect: Dialect) async throws {
            let gateway = try LiveGateway()
            try await JobTableTests.retireLeftovers(PostgresPoolFor.live())
            let token = gateway.token("alice"), port = gateway.port
            let data = Self.bytes((12 << 20) + 4321), cut = data.count * 3 / 10
            let key = "resumable-\(UUID().uuidString)/cut.bin"
            let creator = try LoopbackClient(port: port)
            try creator.send(
                Self.head(
                    "POST", "/v1/resumable/?accessLevel=private&key=\(key)", port: port, token: token, dialect.creation, length: data.count)
            )
            // The upload URL comes before a byte of the body has been sent.
            let interim = try creator.readResponse()
            #expect(interim.status == 104)
            #expect(interim.header("upload-draft-interop-version") == String(dialect.version))
            let path = try Self.path(interim.header("location"), port: port)
            let id = String(path.dropFirst("/v1/resumable/".count))
            try creator.send(data[0..<cut])
            // The connection dies (both ways; the bytes sent are in the kernel's hands by now).
            _ = Glibc.shutdown(creator.fd, Int32(SHUT_RDWR))
            // At once, as a client that saw its connection die: the offset waits for the
            // creation's request to save what arrived, so the append that follows is taken.
            let head = try Self.offset(path, port: port, token: token, dialect)
            #expect(head.status == 204)
            #expect(head.header("upload-offset") == String(cut), "every byte that arrived is kept")
            #expect(head.header(dialect.completenessField) == dialect.says(complete: false))
            #expect(head.header("cache-control") == "no-store")
            let appender = try LoopbackClient(port: port)
            try appender.send(
                Self.head("PATCH", path, port: port, token: token, dialect.append + "Upload-Offset: \(cut)\r\n", length: data.count - cut))
            try appender.send(data[cut...])
            let done = try appender.readResponse(timeout: 60)
            #expect(done.status == 201, "\(done.text)")
            #expect(done.header("upload-offset") == String(data.count))
            #expect(done.header(dialect.completenessField) == dialect.says(complete: true))
            #expect(done.text.contains(#""state":"completed""#))
            #expect(try await Self.objectDigest(gateway, "private/alice/\(key)") == Digest.sha256(data))
            let finished = try await gateway.request("GET", "/v1/jobs/\(id)", token: token).json
            #expect(finished["type"] as? String == "upload")
            #expect(finished["state"] as? String == "completed" && finished["bytesCommitted"] as? Int == data.count)
            await gateway.stop()
        }

        @Test(arguments: dialects)
        func oneByteAndEmptyUploadsInOneRequest(dialect: Dialect) async throws {
            let gateway = try LiveGateway()
            let token = gateway.token("alice"), port = gateway.port
            let folder = "resumable-\(UUID().uuidString)"
            for (name, body) in [("one.bin", [UInt8(42)]), ("empty.bin", [])] {
                let client = try LoopbackClient(port: port)
                try client.send(
                    Self.head(
                        "POST", "/v1/resumable/?key=\(folder)/\(name)", port: port, token: token, dialect.creation, length: body.count))
                #expect(try client.readResponse().status == 104)
                try client.send(body)
                let created = try client.readResponse()
                #expect(created.status == 201 && created.header("upload-offset") == String(body.count), "\(created.text)")
                #expect(created.text.contains(#""state":"completed""#))
                #expect(try await Self.objectDigest(gateway, "private/alice/\(folder)/\(name)") == Digest.sha256(body))
                let path = try Self.path(created.header("location"), port: port)
                let head = try Self.offset(path, port: port, token: token, dialect)
                #expect(head.header(dialect.completenessField) == dialect.says(complete: true))
            }
            await gateway.stop()
        }

        @Test(arguments: dialects)
        func aWrongOffsetIs409AndACancelledUploadIsGone(dialect: Dialect) async throws {
            let gateway = try LiveGateway()
            let token = gateway.token("alice"), port = gateway.port
            let partial =
                dialect.version == 3
                ? "Upload-Draft-Interop-Version: 3\r\nUpload-Incomplete: ?1\r\n"
                : "Upload-Draft-Interop-Version: 6\r\nUpload-Complete: ?0\r\n"
            let creator = try LoopbackClient(port: port)
            try creator.send(
                Self.head("POST", "/v1/resumable/?key=resumable-\(UUID().uuidString)/w.bin", port: port, token: token, partial, length: 5))
            #expect(try creator.readResponse().status == 104)
            try creator.send("hello")
            let created = try creator.readResponse()
            #expect(created.status == 201 && created.header("upload-offset") == "5")
            #expect(created.header(dialect.completenessField) == dialect.says(complete: false))
            let path = try Self.path(created.header("location"), port: port)
            let wrong = try LoopbackClient(port: port)
            try wrong.send(Self.head("PATCH", path, port: port, token: token, dialect.append + "Upload-Offset: 3\r\n", length: 2) + "xy")
            let refused = try wrong.readResponse()
            #expect(refused.status == 409 && refused.header("upload-offset") == "5" && refused.text.contains("offset_mismatch"))
            let deleter = try LoopbackClient(port: port)
            try deleter.send(
                Self.head("DELETE", path, port: port, token: token, "Upload-Draft-Interop-Version: \(dialect.version)\r\n", length: nil))
            #expect(try deleter.readResponse().status == 204)
            let gone = try Self.offset(path, port: port, token: token, dialect)
            #expect(gone.status == 404)
            await gateway.stop()
        }

        /// Behind a proxy that takes a 1xx for the final answer (GATEWAY_RESUMABLE_104=false),
        /// a creation that names a version gets its final answer with no 104 before it.
        @Test func withoutThe104SettingTheCreationAnswersOnlyAtTheEnd() async throws {
            let gateway = try LiveGateway { $0.resumable104 = false }
            let token = gateway.token("alice"), port = gateway.port
            let key = "resumable-\(UUID().uuidString)/no104.bin"
            let client = try LoopbackClient(port: port)
            try client.send(
                Self.head("POST", "/v1/resumable/?key=\(key)", port: port, token: token, Self.dialects[1].creation, length: 6) + "whole!")
            let answer = try client.readResponse()
            #expect(answer.status == 201, "no 104 first")
            #expect(answer.header("location")?.contains("/v1/resumable/") == true && answer.header("upload-complete") == "?1")
            await gateway.stop()
        }

        @Test func aCreationWithoutTheVersionIsAnOrdinaryUploadWithNo104() async throws {
            let gateway = try LiveGateway()
            let token = gateway.token("alice"), port = gateway.port
            let key = "resumable-\(UUID().uuidString)/plain.bin"
            let client = try LoopbackClient(port: port)
            try client.send(
                Self.head("POST", "/v1/resumable/?key=\(key)", port: port, token: token, "Upload-Complete: ?1\r\n", length: 6) + "plain!")
            let answer = try client.readResponse()
            #expect(answer.status == 201, "the final answer first: no 104")
            #expect(answer.header("upload-complete") == nil && answer.text.contains(#""state":"completed""#))
            #expect(try await Self.objectDigest(gateway, "private/alice/\(key)") == Digest.sha256(Array("plain!".utf8)))
            await gateway.stop()
        }
    }
}

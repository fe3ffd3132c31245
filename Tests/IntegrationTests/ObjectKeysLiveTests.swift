import Foundation
import S3
import Testing

@testable import Adapters
@testable import Gateway
@testable import TransferGateway

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Keys as S3 lists them, against the real PostgreSQL and SeaweedFS: a key with a Unicode
/// noncharacter is refused on every route that makes one, and the listing (`encoding-type=url`)
/// gives back keys holding `%`, `+`, a space and a non-ASCII letter exactly as they were made.
extension JobTableTests {
    @Suite struct ObjectKeysLiveTests {
        func gateway() async throws -> LiveGateway {
            try await JobTableTests.retireLeftovers(PostgresPoolFor.live())
            return try LiveGateway { $0.spoolDirectory = NSTemporaryDirectory() + "gateway-spool-" + UUID().uuidString }
        }

        /// A query value with every byte but ASCII letters and digits percent-encoded.
        static func encoded(_ text: String) -> String {
            text.utf8.map { byte in
                (byte >= 0x30 && byte <= 0x39) || (byte | 0x20 >= 0x61 && byte | 0x20 <= 0x7A)
                    ? String(UnicodeScalar(byte)) : String(format: "%%%02X", byte)
            }.joined()
        }

        @Test func aKeyWithANoncharacterIsRefusedOnPresignUploadsAndJobs() async throws {
            let a = try await gateway()
            let token = a.token("nonchar-\(UUID().uuidString.prefix(8))")
            let bad = "folder/a\u{FFFE}b.txt"
            let requests: [(String, [String: Any])] = [
                ("/v1/presign", ["operation": "put", "accessLevel": "private", "key": bad]),
                ("/v1/presign/post", ["accessLevel": "private", "key": bad]),
                ("/v1/uploads", ["accessLevel": "private", "key": bad, "size": 10]),
                ("/v1/jobs", ["type": "upload", "accessLevel": "private", "key": bad]),
                (
                    "/v1/jobs",
                    [
                        "type": "copy", "source": ["accessLevel": "private", "key": "s"],
                        "destination": ["accessLevel": "private", "key": bad],
                    ]
                ),
            ]
            for (path, body) in requests {
                let answer = try await a.request("POST", path, token: token, json: body)
                #expect(answer.status == 400 && answer.json["code"] as? String == "invalid_key", "\(path): \(answer.status) \(answer.json)")
            }
            let listed = try await a.request("GET", "/v1/objects?accessLevel=private&prefix=\(Self.encoded("a\u{FFFF}"))", token: token)
            #expect(listed.status == 400 && listed.json["code"] as? String == "invalid_key")
            await a.stop()
        }

        /// Uploaded through the gateway, listed back byte for byte, one per page, and the cursor
        /// ends the listing.
        @Test func theListingGivesBackKeysWithPercentPlusSpaceAndNonASCII() async throws {
            let a = try await gateway()
            let token = a.token("listing-\(UUID().uuidString.prefix(8))")
            let folder = "enc-\(UUID().uuidString.prefix(8))/"
            let names = [folder + "100% a+b é.txt", folder + "100%25 a b.txt", folder + "plus+plus", folder + "ü/ñ space+%2B"]
            for name in names {
                let created = try await a.request(
                    "POST", "/v1/jobs", token: token, json: ["type": "upload", "accessLevel": "private", "key": name])
                let id = try #require(created.json["id"] as? String, "\(created.status) \(created.json)")
                let sent = try await a.request(
                    "PUT", "/v1/jobs/\(id)/data", token: token, rawBody: Data(name.utf8),
                    headers: ["Content-Type": "application/octet-stream"])
                #expect(sent.status == 200 && sent.json["state"] as? String == "completed", "\(name): \(sent.status) \(sent.json)")
            }
            let whole = try await a.request("GET", "/v1/objects?accessLevel=private&prefix=\(Self.encoded(folder))", token: token)
            let keys = (whole.json["objects"] as? [[String: Any]] ?? []).compactMap { $0["key"] as? String }
            #expect(keys == names.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }, "\(whole.json)")
            // One per page: each cursor is a decoded key, and following them ends.
            var paged: [String] = []
            var cursor: String?
            for _ in 0..<10 {
                let query =
                    "accessLevel=private&limit=1&prefix=\(Self.encoded(folder))" + (cursor.map { "&cursor=\(Self.encoded($0))" } ?? "")
                let page = try await a.request("GET", "/v1/objects?\(query)", token: token)
                #expect(page.status == 200, "\(page.json)")
                paged += (page.json["objects"] as? [[String: Any]] ?? []).compactMap { $0["key"] as? String }
                cursor = page.json["nextCursor"] as? String
                if cursor == nil { break }
            }
            #expect(paged == keys && cursor == nil)
            for name in names {
                let properties = try await a.request(
                    "GET", "/v1/objects/properties?accessLevel=private&key=\(Self.encoded(name))", token: token)
                #expect(properties.status == 200 && properties.json["size"] as? Int == name.utf8.count, "\(name): \(properties.json)")
            }
            await a.stop()
        }

        /// A key with U+FFFE put straight into S3 (as before the rule, or by another tool) is listed
        /// as it is, and paging past it ends instead of answering its page forever.
        @Test func aNoncharacterKeyMadeOutsideIsListedAsItIsAndPagedPast() async throws {
            let a = try await gateway()
            let subject = "outside-\(UUID().uuidString.prefix(8))"
            let token = a.token(subject)
            let client = try a.configuration.makeS3Client()
            let names = ["k\u{FFFD}", "k\u{FFFE}", "k\u{FFFF}z", "l"]
            for name in names { _ = try await client.putObject(key: "private/\(subject)/\(name)", body: .bytes([1])) }
            var paged: [String] = []
            var cursor: String?
            for _ in 0..<10 {
                let page = try await a.request(
                    "GET", "/v1/objects?accessLevel=private&limit=1" + (cursor.map { "&cursor=\(Self.encoded($0))" } ?? ""),
                    token: token)
                #expect(page.status == 200, "\(page.json)")
                paged += (page.json["objects"] as? [[String: Any]] ?? []).compactMap { $0["key"] as? String }
                cursor = page.json["nextCursor"] as? String
                if cursor == nil { break }
            }
            #expect(paged == names && cursor == nil, "\(paged.map { $0.unicodeScalars.map { String($0.value, radix: 16) } })")
            for name in names { try? await client.deleteObject(key: "private/\(subject)/\(name)") }
            await a.stop()
        }
    }
}

import Foundation
import SigV4
import Testing

@testable import S3

/// Presigned URLs for awkward keys must equal botocore's, character for character, for the same
/// time and credentials. Expected values: Fixtures/botocore-presign.json, generated once by
/// scripts/make_botocore_presign_fixtures.py (botocore 1.44.8).
struct BotocoreCase: Sendable, CustomTestStringConvertible {
    let method: String
    let key: String
    let url: String
    var testDescription: String { "\(method) \(key)" }
}

struct BotocoreFixture: Decodable {
    struct Case: Decodable { let method: String; let key: String; let url: String }
    let secondsSince1970: Int
    let accessKeyID: String
    let secretAccessKey: String
    let region: String
    let endpoint: String
    let bucket: String
    let expires: Int
    let cases: [Case]

    static let loaded: BotocoreFixture = {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures/botocore-presign.json")
        guard let data = try? Data(contentsOf: url),
            let fixture = try? JSONDecoder().decode(BotocoreFixture.self, from: data)
        else {
            preconditionFailure("cannot read \(url.path)")
        }
        return fixture
    }()
}

@Test(arguments: BotocoreFixture.loaded.cases.map { BotocoreCase(method: $0.method, key: $0.key, url: $0.url) })
func presignedURLMatchesBotocore(_ c: BotocoreCase) throws {
    let f = BotocoreFixture.loaded
    let endpoint = try S3Endpoint.parse(url: f.endpoint, bucket: f.bucket, region: f.region, pathStyle: true, accelerate: false)
    let client = S3Client(
        endpoint: endpoint,
        credentials: Credentials(accessKeyID: f.accessKeyID, secretAccessKey: f.secretAccessKey),
        now: { f.secondsSince1970 })
    #expect(client.presignedURL(method: c.method, key: c.key, expires: f.expires) == c.url)
}

@Test func fixtureCoversTheAwkwardKeys() {
    let keys = Set(BotocoreFixture.loaded.cases.map(\.key))
    #expect(keys.count >= 15)
    #expect(keys.contains("with space.txt") && keys.contains("plus+sign.txt") && keys.contains("percent%41.txt"))
    #expect(keys.contains("tilde~file.txt") && keys.contains("ünïcödé.txt"))
}

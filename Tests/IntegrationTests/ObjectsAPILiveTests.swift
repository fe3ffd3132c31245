import Foundation
import TestSupport
import Testing

@testable import Adapters
@testable import Gateway
@testable import TransferGateway

/// The file-browser routes against SeaweedFS: folders by delimiter, a move (copy pinned to the
/// source's ETag, then the source deleted) and a bulk delete, each told in the event feed.
@Suite(.enabled(if: liveTestsEnabled, "set GATEWAY_LIVE_TESTS=1 (scripts/test.sh does)"), .serialized)
struct ObjectsAPILiveTests {
    @Test func foldersMovesAndBulkDeletes() async throws {
        let gateway = try LiveGateway()
        let owner = "objects-\(UUID())"
        let token = gateway.token(owner)
        let client = try gateway.configuration.makeS3Client()
        let body = repeatingBytes(300_000, seed: 4)
        for name in ["a.txt", "photos/1.jpg", "photos/2.jpg", "photos/2026/3.jpg"] {
            _ = try await client.putObject(key: "private/\(owner)/\(name)", body: .bytes(body))
        }
        let level = try await gateway.request("GET", "/v1/objects?accessLevel=private&delimiter=/", token: token)
        #expect(level.json["folders"] as? [String] == ["photos/"], "\(level.json)")
        #expect((level.json["objects"] as? [[String: Any]])?.compactMap { $0["key"] as? String } == ["a.txt"])

        let moved = try await gateway.request(
            "POST", "/v1/objects/move", token: token,
            json: [
                "source": ["accessLevel": "private", "key": "photos/1.jpg"],
                "destination": ["accessLevel": "protected", "key": "album/1.jpg"],
            ])
        #expect(moved.status == 200 && moved.json["objectKey"] as? String == "protected/\(owner)/album/1.jpg", "\(moved.json)")
        #expect(try await client.getObject(key: "protected/\(owner)/album/1.jpg").body == body)
        let gone = try await gateway.request("GET", "/v1/objects/properties?accessLevel=private&key=photos/1.jpg", token: token)
        #expect(gone.status == 404)
        let stranger = try await gateway.request(
            "POST", "/v1/objects/move", token: gateway.token("someone-else"),
            json: [
                "source": ["accessLevel": "protected", "key": "album/1.jpg", "targetIdentityId": owner],
                "destination": ["accessLevel": "private", "key": "stolen.jpg"],
            ])
        #expect(stranger.status == 403)

        let deleted = try await gateway.request(
            "POST", "/v1/objects/delete", token: token,
            json: ["accessLevel": "private", "keys": ["a.txt", "photos/2.jpg", "photos/2026/3.jpg", "never.txt"]])
        #expect(deleted.status == 200 && (deleted.json["deleted"] as? [String])?.count == 4, "\(deleted.json)")
        let after = try await gateway.request("GET", "/v1/objects?accessLevel=private", token: token)
        #expect((after.json["objects"] as? [Any])?.isEmpty == true, "\(after.json)")
        _ = try await gateway.request(
            "POST", "/v1/objects/delete", token: token, json: ["accessLevel": "protected", "keys": ["album/1.jpg"]])
        // Each change is in the owner's event feed, in order, numbered from 1.
        let feed = try await gateway.request("GET", "/v1/events?since=0", token: token, headers: ["Accept": "application/json"])
        let events = feed.json["events"] as? [[String: Any]] ?? []
        #expect(events.map { $0["id"] as? String } == (1...6).map { String($0) }, "\(feed.json)")
        #expect(events.map { $0["type"] as? String } == ["object.moved"] + Array(repeating: "object.deleted", count: 5))
        let move = events.first?["data"] as? [String: Any] ?? [:]
        #expect((move["destination"] as? [String: Any])?["objectKey"] as? String == "protected/\(owner)/album/1.jpg", "\(move)")
        #expect(move["etag"] as? String == moved.json["etag"] as? String && move["size"] as? Int == body.count)
        await gateway.stop()
    }
}

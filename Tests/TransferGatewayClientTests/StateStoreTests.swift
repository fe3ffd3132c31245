import Foundation
import Testing

@testable import TransferGatewayClient

/// Records round-trip, are replaced whole, and are listed oldest first.
struct StateStoreTests {
    static func directory() -> URL {
        FileManager.default.temporaryDirectory.appendingPathComponent("tgc-state-\(UUID().uuidString)")
    }

    @Test func recordRoundTripsAndIsReplacedAtomically() throws {
        let store = try StateStore(directory: Self.directory())
        defer { try? FileManager.default.removeItem(at: store.directory) }
        var record = TransferRecord(
            id: "t1", direction: .upload, method: .clientUpload, reference: .private("a.bin"), filePath: "/tmp/a.bin")
        record.size = 25 << 20
        record.metadata = ["owner": "me"]
        try store.save(record)
        #expect(try store.load("t1") == record)
        record.serverID = "u-1"
        record.partSize = 5 << 20
        try store.save(record)
        #expect(try store.load("t1") == record)
        // No temporary file is left beside the record.
        let names = try FileManager.default.contentsOfDirectory(atPath: store.directory.path)
        #expect(names == ["t1.json"])
    }

    @Test func allListsOldestFirstAndSkipsWhatItCannotRead() throws {
        let store = try StateStore(directory: Self.directory())
        defer { try? FileManager.default.removeItem(at: store.directory) }
        let older = TransferRecord(
            id: "b", direction: .download, method: .download, reference: .public("x"), filePath: "/tmp/x",
            createdAt: Date(timeIntervalSince1970: 10))
        let newer = TransferRecord(
            id: "a", direction: .upload, method: .uploadJob, reference: .public("y"), filePath: "/tmp/y",
            createdAt: Date(timeIntervalSince1970: 20))
        try store.save(newer)
        try store.save(older)
        try Data("not json".utf8).write(to: store.url(of: "broken"))
        #expect(store.all().map(\.id) == ["b", "a"])
        store.remove("b")
        #expect(store.all().map(\.id) == ["a"])
    }

    @Test func createKeysAreStableUntilANewCreate() {
        var record = TransferRecord(id: "t", direction: .download, method: .download, reference: .public("x"), filePath: "/tmp/x")
        #expect(record.createKey == "t-1")
        record.nextCreateKey()
        #expect(record.createKey == "t-2")
        #expect(record.partialURL.path == "/tmp/x.part")
    }
}

import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The state directory: one JSON file per task (`<id>.json`), each replaced atomically (written
/// to a temporary file in the same directory, then renamed over the old one, POSIX `rename(2)`),
/// so a crash leaves the old record or the new one, never half of one.
struct StateStore: Sendable {
    let directory: URL

    init(directory: URL) throws {
        self.directory = directory
        do {
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        } catch {
            throw TransferError(.fileError, "cannot create the state directory \(directory.path): \(error.localizedDescription)")
        }
    }

    func url(of id: String) -> URL { directory.appendingPathComponent("\(id).json") }

    /// Where `upload(data:)` keeps its bytes, so the upload survives a relaunch.
    func dataURL(of id: String) -> URL { directory.appendingPathComponent("\(id).data") }

    func save(_ record: TransferRecord) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        encoder.dateEncodingStrategy = .millisecondsSince1970
        let temporary = directory.appendingPathComponent(".\(record.id).json.\(UUID().uuidString).tmp")
        do {
            try encoder.encode(record).write(to: temporary)
            guard rename(temporary.path, url(of: record.id).path) == 0 else {
                throw TransferError(.fileError, "cannot replace the record of \(record.id) (errno \(errno))")
            }
        } catch let error as TransferError {
            try? FileManager.default.removeItem(at: temporary)
            throw error
        } catch {
            try? FileManager.default.removeItem(at: temporary)
            throw TransferError(.fileError, "cannot write the record of \(record.id): \(error.localizedDescription)")
        }
    }

    func load(_ id: String) throws -> TransferRecord {
        do {
            return try Self.decoder.decode(TransferRecord.self, from: Data(contentsOf: url(of: id)))
        } catch {
            throw TransferError(.fileError, "cannot read the record of \(id): \(error.localizedDescription)")
        }
    }

    func remove(_ id: String) {
        try? FileManager.default.removeItem(at: url(of: id))
    }

    /// Every readable record of the current version, oldest first. Others are skipped.
    func all() -> [TransferRecord] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []
        return names.filter { $0.hasSuffix(".json") && !$0.hasPrefix(".") }
            .compactMap { try? Self.decoder.decode(TransferRecord.self, from: Data(contentsOf: directory.appendingPathComponent($0))) }
            .filter { $0.version == TransferRecord.currentVersion }
            .sorted { ($0.createdAt, $0.id) < ($1.createdAt, $1.id) }
    }

    static let decoder: JSONDecoder = {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .millisecondsSince1970
        return decoder
    }()
}

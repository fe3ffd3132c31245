import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A download's `FILE.part`, appended to by one ranged answer: it takes the body only when the
/// answer is the bytes asked for of the object pinned (206 from `start` with the pinned ETag, or
/// 200 with that ETag when asked from 0), so nothing of another object is ever written.
final class PartialFile: ResponseSink {
    let url: URL
    let start: Int64
    let etag: String
    private let handle = Locked<FileHandle?>(nil)

    init(url: URL, start: Int64, etag: String) {
        self.url = url
        self.start = start
        self.etag = etag
    }

    /// The bytes already there (0 when there is no file).
    static func length(_ url: URL) -> Int64 {
        ((try? FileManager.default.attributesOfItem(atPath: url.path)[.size]) as? NSNumber)?.int64Value ?? 0
    }

    func accept(_ response: HTTPURLResponse) -> Bool {
        let tag = response.value(forHTTPHeaderField: "ETag").map(ETag.normalized)
        guard tag == ETag.normalized(etag) else { return false }
        switch response.statusCode {
        case 206:
            guard let range = response.value(forHTTPHeaderField: "Content-Range"), ContentRange.start(range) == start else { return false }
        case 200:
            guard start == 0 else { return false }
        default:
            return false
        }
        return open(truncating: response.statusCode == 200)
    }

    private func open(truncating: Bool) -> Bool {
        handle.withLock { handle in
            if !FileManager.default.fileExists(atPath: url.path) { _ = FileManager.default.createFile(atPath: url.path, contents: nil) }
            guard let file = try? FileHandle(forWritingTo: url) else { return false }
            if truncating { try? file.truncate(atOffset: 0) }
            _ = try? file.seekToEnd()
            handle = file
            return true
        }
    }

    func write(_ data: Data) throws {
        try handle.withLock { handle in
            guard let handle else { throw TransferError(.fileError, "\(url.lastPathComponent) is not open") }
            do {
                try handle.write(contentsOf: data)
            } catch {
                throw TransferError(.fileError, "cannot write \(url.lastPathComponent): \(error.localizedDescription)")
            }
        }
    }

    /// Flushes and closes the file.
    func close() {
        handle.withLock { handle in
            try? handle?.synchronize()
            try? handle?.close()
            handle = nil
        }
    }
}

/// Entity tags compared as RFC 9110 §8.8.3's strong comparison after dropping the quotes some
/// answers leave out; `W/` tags never match a pinned one.
enum ETag {
    static func normalized(_ tag: String) -> String {
        var text = tag.trimmingCharacters(in: .whitespaces)
        if text.hasPrefix("\"") && text.hasSuffix("\"") && text.count >= 2 { text = String(text.dropFirst().dropLast()) }
        return text
    }

    /// The tag in quotes, as `If-Range` wants it.
    static func quoted(_ tag: String) -> String {
        tag.hasPrefix("\"") || tag.hasPrefix("W/") ? tag : "\"\(tag)\""
    }
}

/// `Content-Range: bytes first-last/size` (RFC 9110 §14.4).
enum ContentRange {
    static func start(_ value: String) -> Int64? {
        let parts = value.trimmingCharacters(in: .whitespaces).split(separator: " ")
        guard parts.count == 2, parts[0].lowercased() == "bytes", let dash = parts[1].firstIndex(of: "-") else { return nil }
        return Int64(parts[1][..<dash])
    }
}

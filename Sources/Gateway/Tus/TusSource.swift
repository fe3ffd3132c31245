import Foundation

/// What a tus upload job keeps as its `source`: the `Upload-Metadata` header as the client
/// created the upload, which `HEAD` returns as it came (tus 1.0 core: the server MUST include
/// it when the upload was created with metadata).
struct TusSource: Codable, Equatable {
    var uploadMetadata: String

    var json: String {
        (try? JSONEncoder().encode(self)).map { String(decoding: $0, as: UTF8.self) } ?? "{}"
    }

    /// The record of a tus upload job, nil for any other source (an `upload` job made at
    /// `/v1/jobs` has `{}`).
    static func decode(_ json: String?) -> TusSource? {
        guard let json else { return nil }
        return try? JSONDecoder().decode(TusSource.self, from: Data(json.utf8))
    }
}

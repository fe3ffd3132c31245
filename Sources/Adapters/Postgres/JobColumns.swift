import Foundation
import TransferEngine

/// The JSON columns of `jobs` (`source`, `options`, `error`) and the typed values they hold:
/// the only place a job's values are JSON text on the way to or from PostgreSQL. A row that does
/// not decode is `UnreadableJob`, naming the job and the column, never a silent default.
enum JobColumns {
    /// `checksum_algorithm` and `checksum_value` (of `jobs`, `uploads` and `object_checksums`):
    /// both or neither; an algorithm this build does not know reads as no checksum.
    static func checksum(algorithm: String?, value: String?) throws -> ObjectChecksum? {
        guard let algorithm, let value, let known = ObjectChecksum.Algorithm(rawValue: algorithm) else { return nil }
        return ObjectChecksum(algorithm: known, value: value)
    }

    /// `source` of a job of `kind`: `{}` (an upload job), `{"uploadMetadata": …}` (a tus
    /// upload), `{"url": …}` (an import), `{"key": …, "contentType"?, "filename"?}` (a copy or
    /// a download).
    static func json(_ source: JobSource) -> String {
        switch source {
        case .uploaded(nil): return "{}"
        case .uploaded(let metadata?): return encoded(UploadRecord(uploadMetadata: metadata))
        case .url(let url): return encoded(URLRecord(url: url))
        case .object(let object): return encoded(object)
        }
    }

    static func source(_ json: String?, kind: Job.Kind, job id: String) throws -> JobSource {
        let text = json ?? "{}"
        do {
            switch kind {
            case .upload:
                return .uploaded(tusMetadata: try decoded(UploadRecord.self, text).uploadMetadata)
            case .import: return .url(try decoded(URLRecord.self, text).url)
            case .copy, .download: return .object(try decoded(ObjectSource.self, text))
            }
        } catch {
            throw UnreadableJob(id: id, column: "source")
        }
    }

    static func json(_ options: JobOptions) -> String {
        encoded(options)
    }

    static func options(_ json: String, job id: String) throws -> JobOptions {
        do { return try decoded(JobOptions.self, json) } catch { throw UnreadableJob(id: id, column: "options") }
    }

    /// `error` and `last_error`: `{"code", "cause"?, "status"?, "retryable"?}`.
    static func json(_ failure: JobFailure?) -> String? {
        failure.map(encoded)
    }

    static func failure(_ json: String?, job id: String, column: String = "error") throws -> JobFailure? {
        guard let json else { return nil }
        do { return try decoded(JobFailure.self, json) } catch { throw UnreadableJob(id: id, column: column) }
    }

    /// An upload job's source: `{}`, or a tus upload's `Upload-Metadata`.
    private struct UploadRecord: Codable {
        var uploadMetadata: String?
    }

    private struct URLRecord: Codable {
        var url: String
    }

    private static func encoded<T: Encodable>(_ value: T) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        // Values of our own types always encode; "{}" is unreachable.
        return (try? encoder.encode(value)).map { String(decoding: $0, as: UTF8.self) } ?? "{}"
    }

    private static func decoded<T: Decodable>(_ type: T.Type, _ json: String) throws -> T {
        try JSONDecoder().decode(T.self, from: Data(json.utf8))
    }
}

/// A `jobs` row whose JSON column does not hold what its type needs: the job is named so an
/// operator can find it; the column, not its content, is said.
public struct UnreadableJob: Error, CustomStringConvertible {
    public let id: String
    public let column: String

    public var description: String { "job \(id): its \(column) column cannot be read" }
}

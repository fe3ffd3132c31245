import Foundation

/// What a transfer reports on its `events` sequence.
public enum TransferEvent: Sendable, Equatable {
    /// Bytes moved: `completed` of `total` (`total` is `nil` before a download knows the size).
    case progress(completed: Int64, total: Int64?)
    /// The transfer stopped at the caller's request; `resume()` goes on from here.
    case paused
    /// The transfer started or went on (after `resume()`, or after a wait for a retry).
    case resumed
    /// The transfer finished. Always the last event, or `failed` is.
    case completed(TransferResult)
    /// The transfer ended without finishing.
    case failed(TransferError)

    /// Whether nothing follows this event.
    public var isFinal: Bool {
        switch self {
        case .completed, .failed: return true
        default: return false
        }
    }
}

/// What a finished transfer made.
public struct TransferResult: Codable, Hashable, Sendable {
    /// The object.
    public let reference: ObjectReference
    /// The object key in the bucket (`private/alice/notes/a.txt`), when the gateway said it.
    public let objectKey: String?
    /// The size in bytes.
    public let size: Int64
    /// The object's ETag, when known.
    public let etag: String?
    /// For a download, where the file now is.
    public let fileURL: URL?
    /// The object's whole-object checksum, when the gateway knows it (a client upload's
    /// CRC-32C, checked against the parts the client summed).
    public internal(set) var checksum: TransferChecksum? = nil
}

/// A whole-object checksum: `algorithm` as S3 spells it (`CRC32C`), `value` base64 of the
/// digest (a CRC-32C's four bytes big-endian), as the gateway's `checksum` field carries it.
public struct TransferChecksum: Codable, Hashable, Sendable {
    /// `CRC32C` or `SHA256`.
    public let algorithm: String
    /// Base64 of the digest.
    public let value: String

    /// A checksum of `algorithm` whose digest is `value` (base64).
    public init(algorithm: String, value: String) {
        self.algorithm = algorithm
        self.value = value
    }
}

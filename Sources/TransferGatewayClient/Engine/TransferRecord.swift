import Foundation

/// What the state directory keeps of one task: enough to go on after the app or the process is
/// killed. Written (atomically) before each step the server would remember, so a create whose
/// answer was lost is sent again with the same `Idempotency-Key` and finds the same job.
struct TransferRecord: Codable, Equatable, Sendable {
    /// How the bytes move.
    enum Method: String, Codable, Sendable {
        /// A small file sent to the gateway (`POST /v1/jobs` type `upload`, `PUT`/`PATCH` data).
        case uploadJob
        /// A client upload: parts straight to S3 on presigned URLs (`/v1/uploads`).
        case clientUpload
        /// A download job's data link, read with `Range` + `If-Range` into `FILE.part`.
        case download
    }

    /// The record's layout; a record of another version is left alone.
    static let currentVersion = 1

    var version = TransferRecord.currentVersion
    let id: String
    let direction: TransferDirection
    let method: Method
    let reference: ObjectReference
    /// The source (upload) or destination (download) file.
    let filePath: String
    /// Whether the file belongs to the state directory (`upload(data:)`), to remove at the end.
    var ownsFile = false
    var contentType: String?
    var metadata: [String: String]?
    /// The upload's size, or the pinned object's size once a download job says it.
    var size: Int64?
    var state: TransferState = .waiting
    /// The job id (upload job, download) or upload id (client upload) once the gateway gave it.
    var serverID: String?
    /// The `Idempotency-Key` of the create in flight (a new one for each create the task makes).
    var createKey: String
    /// Creates made so far (a download whose link expired makes another job).
    var creates = 0
    /// A client upload's part size, from the gateway.
    var partSize: Int64?
    /// A download's pinned ETag: a later job that pins another is `sourceChanged`.
    var etag: String?
    /// Why the last run failed, when it may be resumed.
    var lastError: TransferError?
    var createdAt: Date

    init(id: String, direction: TransferDirection, method: Method, reference: ObjectReference, filePath: String, createdAt: Date = Date()) {
        self.id = id
        self.direction = direction
        self.method = method
        self.reference = reference
        self.filePath = filePath
        self.createKey = "\(id)-1"
        // Whole milliseconds, as the record stores them, so a record reads back equal.
        self.createdAt = Date(timeIntervalSince1970: (createdAt.timeIntervalSince1970 * 1000).rounded() / 1000)
    }

    /// The next create's key: a retried create reuses the current one; a deliberate new create
    /// (another download job after a link expired) takes the next.
    mutating func nextCreateKey() {
        creates += 1
        createKey = "\(id)-\(creates + 1)"
    }

    var fileURL: URL { URL(fileURLWithPath: filePath) }
    /// Where a download is written until it is whole.
    var partialURL: URL { URL(fileURLWithPath: filePath + ".part") }
}

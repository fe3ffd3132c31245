import Foundation

/// Options every job type takes (openapi.yaml, `JobOptions`), stored as the job's `options` JSON.
public struct JobOptions: Codable, Sendable, Equatable {
    public var partSize: Int64?
    public var concurrency: Int?
    public var retryLimit: Int?
    public var timeoutSeconds: Int?
    public var bandwidthLimit: Int64?
    public var contentType: String?
    public var metadata: [String: String]?
    public var cacheControl: String?
    public var contentDisposition: String?
    public var serverSideEncryption: String?
    public var kmsKeyId: String?

    public init() {}

    public var attributes: ObjectAttributesSpec {
        ObjectAttributesSpec(contentType: contentType, cacheControl: cacheControl, contentDisposition: contentDisposition,
                             serverSideEncryption: serverSideEncryption, kmsKeyId: kmsKeyId, metadata: metadata ?? [:])
    }

    public static func decode(_ json: String) -> JobOptions {
        (try? JSONDecoder().decode(JobOptions.self, from: Data(json.utf8))) ?? JobOptions()
    }

    public var json: String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        return (try? encoder.encode(self)).map { String(decoding: $0, as: UTF8.self) } ?? "{}"
    }
}

/// The source of a copy or download job: an object key the gateway already checked access to;
/// a download also keeps the type it pinned and the name it is saved as.
public struct ObjectSource: Codable, Sendable, Equatable {
    public var key: String
    public var contentType: String?
    public var filename: String?

    public init(key: String, contentType: String? = nil, filename: String? = nil) {
        self.key = key
        self.contentType = contentType
        self.filename = filename
    }

    public static func decode(_ json: String?) -> ObjectSource? {
        guard let json else { return nil }
        return try? JSONDecoder().decode(ObjectSource.self, from: Data(json.utf8))
    }

    public var json: String {
        (try? JSONEncoder().encode(self)).map { String(decoding: $0, as: UTF8.self) } ?? "{}"
    }
}

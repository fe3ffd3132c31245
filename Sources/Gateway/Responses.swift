import Foundation
import HTTPServer

/// JSON in and out, and problem+json errors.
public enum Responses {
    static let jsonType = "application/json"
    static let problemType = "application/problem+json"

    public static func json(_ status: Int, _ value: some Encodable) -> HTTPResponse {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        encoder.dateEncodingStrategy = .iso8601
        guard let data = try? encoder.encode(value) else { return problem(.internalError) }
        return HTTPResponse(status: status, headers: HTTPHeaders([("Content-Type", jsonType)]), body: .bytes(Array(data)))
    }

    /// Fixed JSON bytes (already encoded).
    static func json(_ status: Int, bytes: [UInt8]) -> HTTPResponse {
        HTTPResponse(status: status, headers: HTTPHeaders([("Content-Type", jsonType)]), body: .bytes(bytes))
    }

    public static func problem(_ error: APIError, extra: KeyValuePairs<String, LogValue> = [:]) -> HTTPResponse {
        var text = JSONText()
        text.begin()
        text.field("type", "about:blank")
        text.field("title", .string(title(error.status)))
        text.field("status", .int(error.status))
        text.field("code", .string(error.code))
        text.field("detail", .string(error.detail))
        for (key, value) in extra { text.field(key, value) }
        text.end()
        return HTTPResponse(status: error.status, headers: HTTPHeaders([("Content-Type", problemType)]),
                            body: .bytes(text.bytes))
    }

    static func title(_ status: Int) -> String {
        switch status {
        case 400: return "Bad Request"
        case 401: return "Unauthorized"
        case 403: return "Forbidden"
        case 404: return "Not Found"
        case 405: return "Method Not Allowed"
        case 409: return "Conflict"
        case 413: return "Content Too Large"
        case 415: return "Unsupported Media Type"
        case 503: return "Service Unavailable"
        default: return status >= 500 ? "Server Error" : "Client Error"
        }
    }

    /// Reads a JSON body of at most `limit` bytes into `T`.
    public static func decode<T: Decodable>(_ type: T.Type, from request: HTTPRequest, limit: Int = 64 * 1024) async throws -> T {
        let bytes = try await jsonBody(of: request, limit: limit)
        do {
            return try JSONDecoder().decode(T.self, from: Data(bytes))
        } catch let error as DecodingError {
            throw APIError.invalidJSON(describe(error))
        }
    }

    /// Reads a JSON object body of at most `limit` bytes with the hand-written parser.
    static func fields(from request: HTTPRequest, limit: Int = 64 * 1024) async throws -> JSONFields {
        let bytes = try await jsonBody(of: request, limit: limit)
        guard let value = try? JSONValue.parse(bytes) else { throw APIError.invalidJSON("The body is not valid JSON.") }
        return try JSONFields(value)
    }

    /// The body of a JSON request: 415 for another media type, 413 past `limit`.
    private static func jsonBody(of request: HTTPRequest, limit: Int) async throws -> [UInt8] {
        if let contentType = request.headers["content-type"],
           !contentType.lowercased().hasPrefix("application/json") {
            throw APIError.unsupportedMediaType
        }
        do {
            return try await request.body.collect(upTo: limit)
        } catch RequestBodyError.tooLarge {
            throw APIError.tooLarge(limit)
        }
    }

    /// Names the field at fault without echoing the client's data back.
    static func describe(_ error: DecodingError) -> String {
        func path(_ keys: [any CodingKey]) -> String {
            keys.map { $0.intValue.map { "[\($0)]" } ?? $0.stringValue }.joined(separator: ".")
        }
        switch error {
        case .keyNotFound(let key, let context): return "Missing field '\(path(context.codingPath + [key]))'."
        case .typeMismatch(_, let context): return "Field '\(path(context.codingPath))' has the wrong type."
        case .valueNotFound(_, let context): return "Field '\(path(context.codingPath))' is null."
        case .dataCorrupted(let context):
            return context.codingPath.isEmpty ? "The body is not valid JSON." : "Field '\(path(context.codingPath))' is invalid."
        @unknown default: return "The body is not valid JSON."
        }
    }
}

import Foundation
import HTTPServer

/// JSON answers (written with `JSONText`), problem+json errors, and the JSON request reader.
public enum Responses {
    static let jsonType = "application/json"
    static let problemType = "application/problem+json"

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

    /// Reads a JSON object body of at most `limit` bytes (the one JSON reader of the API).
    static func fields(from request: HTTPRequest, limit: Int = 64 * 1024) async throws -> JSONFields {
        let bytes = try await jsonBody(of: request, limit: limit)
        guard let value = try? JSONValue.parse(bytes) else { throw APIError.invalidJSON("The body is not valid JSON.") }
        return try JSONFields(value)
    }

    /// Whether a Content-Type names JSON (`application/json`, any case, parameters allowed):
    /// compared over UTF-8 bytes, not Characters.
    static func isJSON(_ contentType: String) -> Bool {
        let utf8 = contentType.utf8
        guard let end = utf8.index(utf8.startIndex, offsetBy: 16, limitedBy: utf8.endIndex) else { return false }
        return Substring(utf8[..<end]).equalsIgnoringASCIICase("application/json")
    }

    /// The body of a JSON request: 415 for another media type, 413 past `limit`.
    private static func jsonBody(of request: HTTPRequest, limit: Int) async throws -> [UInt8] {
        if let contentType = request.headers["content-type"], !isJSON(contentType) {
            throw APIError.unsupportedMediaType
        }
        do {
            return try await request.body.collect(upTo: limit)
        } catch RequestBodyError.tooLarge {
            throw APIError.tooLarge(limit)
        }
    }
}

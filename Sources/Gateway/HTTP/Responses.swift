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
        text.field("code", .string(error.code.rawValue))
        text.field("detail", .string(error.detail))
        for (key, value) in extra { text.field(key, value) }
        text.end()
        var headers = HTTPHeaders([("Content-Type", problemType)])
        if let seconds = error.retryAfter { headers.add("Retry-After", String(seconds)) }
        return HTTPResponse(status: error.status, headers: headers, body: .bytes(text.bytes))
    }

    static func title(_ status: Int) -> String { HTTPStatus.reason(status) }

    /// Reads a JSON object body of at most `limit` bytes (the one JSON reader of the API) whose
    /// members are all `known` ones (else 400 `unknown_field`).
    static func fields(from request: HTTPRequest, known: FieldNames, limit: Int = 64 * 1024) async throws -> JSONFields {
        try fields(try await jsonBody(of: request, limit: limit), known: known)
    }

    /// `fields(from:)` for a body that came whole with its head (an answer given at once).
    static func fieldsAtOnce(from request: HTTPRequest, known: FieldNames, limit: Int = 64 * 1024) throws(APIError) -> JSONFields {
        if let contentType = request.headers["content-type"], !isJSON(contentType) { throw APIError.unsupportedMediaType }
        guard let bytes = request.body.takeWhole() else { throw APIError.badRequest("The request body did not arrive.") }
        guard bytes.count <= limit else { throw APIError.tooLarge(limit) }
        return try fields(bytes, known: known)
    }

    /// A JSON object body already read, whose members are all `known` ones.
    static func fields(_ bytes: [UInt8], known: FieldNames) throws(APIError) -> JSONFields {
        guard let value = try? JSONValue.parse(bytes) else { throw APIError.invalidJSON("The body is not valid JSON.") }
        let fields = try JSONFields(value)
        try fields.only(known)
        return fields
    }

    /// Whether a Content-Type names JSON: the media type exactly `application/json` (any case),
    /// parameters after a `;` allowed (RFC 9110 §8.3.1): `application/jsonx` is not JSON.
    /// Compared over UTF-8 bytes, not Characters.
    static func isJSON(_ contentType: String) -> Bool {
        let utf8 = contentType.utf8
        let end = utf8.firstIndex(of: UInt8(ascii: ";")) ?? utf8.endIndex
        return Substring(utf8[utf8.startIndex..<end]).trimmingOWS().equalsIgnoringASCIICase("application/json")
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

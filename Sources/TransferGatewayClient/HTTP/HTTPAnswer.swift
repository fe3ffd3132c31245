import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// One HTTP answer: status, headers (names in lower case) and the body read into memory (error
/// bodies and JSON; a download's bytes go to its sink instead).
struct HTTPAnswer: Sendable {
    let status: Int
    let headers: [String: String]
    let body: Data

    init(status: Int, headers: [String: String], body: Data) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    init(_ response: HTTPURLResponse, body: Data) {
        var headers: [String: String] = [:]
        for (name, value) in response.allHeaderFields {
            if let name = name as? String, let value = value as? String { headers[name.lowercased()] = value }
        }
        self.init(status: response.statusCode, headers: headers, body: body)
    }

    func header(_ name: String) -> String? { headers[name.lowercased()] }

    var isSuccess: Bool { (200..<300).contains(status) }

    /// Whether the request may be sent again as it was: 429 and 5xx (RFC 9110 §15.6).
    var isTransient: Bool { status == 429 || status >= 500 }

    var retryAfter: Double? { RetryPolicy.retryAfterSeconds(header("Retry-After")) }

    /// The gateway's problem (`application/problem+json`), when the body is one.
    var problem: Problem? { try? JSONDecoder().decode(Problem.self, from: body) }

    /// An `application/problem+json` body: the stable `code` and a `detail` for people.
    struct Problem: Decodable, Sendable {
        let code: String?
        let detail: String?
        let title: String?
    }
}

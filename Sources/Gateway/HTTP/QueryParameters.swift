import HTTPServer

/// A request's query (`name=value&…`, RFC 3986 §3.4, `+` as a space as forms send it): one rule
/// for every route, checked by the responder before any route runs and read through here by
/// the routes that take parameters.
///
/// A name given twice is 400 `validation_failed`: which of two values counts is a guess, and a
/// cache, a proxy and the gateway may each guess differently (`?type=copy&type=import` must not
/// list one type to one of them and the other to the next). So is a pair that is not
/// percent-encoded UTF-8, rather than being dropped unseen.
enum QueryParameters {
    /// The parameters by name, each at most once; with `known`, a name outside it is 400
    /// `unknown_field`.
    static func read(_ http: HTTPRequest, known: Set<String>? = nil) throws(APIError) -> [String: String] {
        try read(http.query, known: known)
    }

    static func read(_ query: Substring?, known: Set<String>? = nil) throws(APIError) -> [String: String] {
        guard let query, !query.isEmpty else { return [:] }
        var out: [String: String] = [:]
        for pair in query.split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard let name = PercentDecoding.decode(parts[0], plusAsSpace: true),
                let value = parts.count > 1 ? PercentDecoding.decode(parts[1], plusAsSpace: true) : ""
            else {
                throw APIError.validation("The query is not percent-encoded UTF-8.")
            }
            if let known, !known.contains(name) {
                throw APIError(.unknownField, "Unknown query parameter '\(name.prefix(64))'.")
            }
            guard out.updateValue(value, forKey: name) == nil else {
                throw APIError.validation("The query parameter '\(name.prefix(64))' is given more than once.")
            }
        }
        return out
    }
}

/// Matches a method and path against patterns like `/v1/jobs/{id}/pause`.
///
/// Generic over what a route leads to, so the server stays ignorant of handlers' shape.
/// Literal segments beat parameters; a path that matches a pattern under another method
/// reports the allowed methods (for 405).
public struct Router<Handler: Sendable>: Sendable {
    public struct Match: Sendable {
        public let handler: Handler
        /// The pattern that matched, for metrics and logs (never the raw path).
        public let pattern: String
        public let parameters: [String: String]
    }

    public enum Outcome: Sendable {
        case matched(Match)
        case methodNotAllowed(allowed: [String])
        case notFound
    }

    private struct Route: Sendable {
        let method: String
        let pattern: String
        let segments: [Segment]
        let handler: Handler
    }

    private enum Segment: Sendable, Equatable {
        case literal(String)
        case parameter(String)
    }

    private var routes: [Route] = []
    /// Routes without parameters, by method and path: most requests end here without a scan.
    private var exact: [String: [String: Route]] = [:]

    public init() {}

    public mutating func add(_ method: String, _ pattern: String, _ handler: Handler) {
        let segments = Self.split(Substring(pattern)).map { part -> Segment in
            if part.hasPrefix("{") && part.hasSuffix("}") { return .parameter(String(part.dropFirst().dropLast())) }
            return .literal(String(part))
        }
        let route = Route(method: method, pattern: pattern, segments: segments, handler: handler)
        routes.append(route)
        if !segments.contains(where: { if case .parameter = $0 { return true } else { return false } }) {
            exact[pattern, default: [:]][method] = route
        }
        // Literal segments first, so /v1/jobs/stats would win over /v1/jobs/{id}.
        routes.sort { a, b in
            let la = a.segments.filter { if case .literal = $0 { return true } else { return false } }.count
            let lb = b.segments.filter { if case .literal = $0 { return true } else { return false } }.count
            return la > lb
        }
    }

    /// The route of exactly this method and path among the patterns without parameters: one
    /// lookup, no scan (nil for anything else, HEAD included).
    public func exactMatch(method: String, path: Substring) -> Match? {
        guard let route = exact[String(path)]?[method] else { return nil }
        return Match(handler: route.handler, pattern: route.pattern, parameters: [:])
    }

    public func route(method: String, path: Substring) -> Outcome {
        if let byMethod = exact[String(path)] {
            if let route = byMethod[method] ?? (method == "HEAD" ? byMethod["GET"] : nil) {
                return .matched(Match(handler: route.handler, pattern: route.pattern, parameters: [:]))
            }
        }
        let parts = Self.split(path)
        var allowed: [String] = []
        for route in routes where route.segments.count == parts.count {
            var parameters: [String: String] = [:]
            var matches = true
            for (segment, part) in zip(route.segments, parts) {
                switch segment {
                case .literal(let text):
                    if text != part { matches = false }
                case .parameter(let name):
                    guard let decoded = PercentDecoding.decode(part), !decoded.isEmpty else { matches = false; break }
                    parameters[name] = decoded
                }
                if !matches { break }
            }
            guard matches else { continue }
            if route.method == method || (method == "HEAD" && route.method == "GET") {
                return .matched(Match(handler: route.handler, pattern: route.pattern, parameters: parameters))
            }
            allowed.append(route.method)
        }
        return allowed.isEmpty ? .notFound : .methodNotAllowed(allowed: allowed)
    }

    private static func split(_ path: Substring) -> [Substring] {
        var trimmed = path
        if trimmed.hasPrefix("/") { trimmed = trimmed.dropFirst() }
        if trimmed.isEmpty { return [] }
        return trimmed.split(separator: "/", omittingEmptySubsequences: false)
    }
}

/// Percent-decoding of path segments and query components (RFC 3986 §2.1).
public enum PercentDecoding {
    /// Decodes `%XX` escapes; nil for a broken escape or bytes that are not UTF-8.
    public static func decode(_ text: Substring, plusAsSpace: Bool = false) -> String? {
        if !text.utf8.contains(UInt8(ascii: "%")) && !(plusAsSpace && text.contains("+")) { return String(text) }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(text.utf8.count)
        var iterator = text.utf8.makeIterator()
        while let byte = iterator.next() {
            if byte == UInt8(ascii: "%") {
                guard let high = iterator.next().flatMap(ByteClass.hexValue),
                    let low = iterator.next().flatMap(ByteClass.hexValue)
                else { return nil }
                bytes.append(UInt8(high * 16 + low))
            } else if plusAsSpace && byte == UInt8(ascii: "+") {
                bytes.append(0x20)
            } else {
                bytes.append(byte)
            }
        }
        return String(validating: bytes, as: UTF8.self)
    }

    /// `name=value&…` into pairs, decoded; malformed pairs are skipped.
    public static func query(_ query: Substring?) -> [(String, String)] {
        guard let query else { return [] }
        return query.split(separator: "&").compactMap { pair in
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard let name = decode(parts[0], plusAsSpace: true) else { return nil }
            let value = parts.count > 1 ? decode(parts[1], plusAsSpace: true) : ""
            guard let value else { return nil }
            return (name, value)
        }
    }
}

/// The two protocol versions the server speaks (RFC 9112 §2.3).
public enum HTTPVersion: Sendable, Equatable {
    case http10
    case http11

    public var text: String { self == .http10 ? "HTTP/1.0" : "HTTP/1.1" }
}

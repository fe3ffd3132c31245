/// How the end of a request body is found (RFC 9112 §6.3).
public enum BodyFraming: Sendable, Equatable {
    case none
    case length(Int)
    case chunked
}

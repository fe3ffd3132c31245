/// The canonical URI of SigV4's canonical request (AWS "Create a canonical request").
///
/// S3 signs the path as sent: each key byte URI-encoded once, nothing removed (`S3Endpoint`
/// builds it). Every other AWS service normalizes the path first — `.` and `..` segments
/// resolved, empty segments dropped — and encodes it; this is that form, for services and for
/// AWS's published test suite.
public enum CanonicalURI {
    /// `path` as written in a request (not percent-encoded), normalized when asked, then encoded.
    public static func generic(path: String, normalize: Bool) -> String {
        let working = normalize ? normalized(path) : path
        return URIEncoding.encode(working, encodeSlash: false)
    }

    /// RFC 3986 §5.2.4 dot-segment removal, with runs of `/` merged; a trailing `/` is kept.
    static func normalized(_ path: String) -> String {
        var output: [Substring] = []
        for segment in path.split(separator: "/", omittingEmptySubsequences: true) {
            switch segment {
            case ".": continue
            case "..": if !output.isEmpty { output.removeLast() }
            default: output.append(segment)
            }
        }
        let trailing = path.hasSuffix("/") || path.hasSuffix("/.") || path.hasSuffix("/..")
        let joined = "/" + output.joined(separator: "/")
        return trailing && !output.isEmpty ? joined + "/" : joined
    }
}

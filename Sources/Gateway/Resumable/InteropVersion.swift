import HTTPServer

/// The iteration of draft-ietf-httpbis-resumable-upload a request speaks, named by its
/// `Upload-Draft-Interop-Version` (an sf-integer each draft defines in its "Draft Version
/// Identification" section). The versions differ on the wire:
///
/// | interop | drafts | completeness field | PATCH body | `Upload-Length`, `Upload-Limit` |
/// |---|---|---|---|---|
/// | 3 | -01 | `Upload-Incomplete` (`?1`: more to come) | any type | no |
/// | 6 | -04, -05 | `Upload-Complete` (`?1`: this is the end) | `application/partial-upload` | yes, `expires` |
/// | 7 | -06 to -08 | as 6 | as 6 | yes, `max-age` |
/// | 8 | -09 on | as 6 | as 6 | yes, `max-age` |
///
/// A server of a draft "MUST NOT send a 104 (Upload Resumption Supported) informational
/// response when the interop version ... is missing or mismatching" and sends its own version in
/// every 104 (draft -01 §4.2, -05 §4.2).
struct InteropVersion: Sendable, Equatable {
    /// The interop version, as sent.
    let number: Int

    /// The versions the gateway speaks: 3 (URLSession of iOS 17), 6, 7 and 8 (later releases).
    static let supported = [3, 6, 7, 8]

    /// What a request's `Upload-Draft-Interop-Version` says.
    enum Detection: Equatable {
        /// No such field: not a resumable-upload request of any draft.
        case absent
        /// A version the gateway does not speak (the field's text).
        case unsupported(String)
        case supported(InteropVersion)
    }

    static func detect(_ headers: HTTPHeaders) -> Detection {
        guard let field = headers["upload-draft-interop-version"] else { return .absent }
        guard let number = StructuredField.integer(field), supported.contains(Int(number)) else { return .unsupported(field) }
        return .supported(InteropVersion(number: Int(number)))
    }

    /// What a request to an upload resource speaks: its version when it names one the gateway
    /// speaks; without one, 3 when it says `Upload-Incomplete`, else 6; nil for a version the
    /// gateway does not speak.
    static func ofResourceRequest(_ headers: HTTPHeaders) -> InteropVersion? {
        switch detect(headers) {
        case .supported(let version): return version
        case .unsupported: return nil
        case .absent: return InteropVersion(number: headers["upload-incomplete"] != nil ? 3 : 6)
        }
    }

    /// The field that says whether an upload (or a request's part of it) is complete.
    var completenessField: String { number == 3 ? "Upload-Incomplete" : "Upload-Complete" }

    /// What a request says of its end: true when the end of its content is the end of the
    /// upload; nil when it does not say; `.failure` when the field is not an sf-boolean.
    func completes(_ headers: HTTPHeaders) -> Result<Bool?, InvalidField> {
        guard let field = headers[completenessField.lowercased()] else { return .success(nil) }
        guard let value = StructuredField.boolean(field) else { return .failure(InvalidField(name: completenessField)) }
        return .success(number == 3 ? !value : value)
    }

    /// The completeness field for an answer.
    func completeness(_ complete: Bool) -> (String, String) {
        (completenessField, (number == 3 ? !complete : complete) ? "?1" : "?0")
    }

    /// Interop 6 and later take a PATCH body only as `application/partial-upload` (draft -04 on).
    var requiresPartialUpload: Bool { number >= 6 }

    /// Interop 6 and later know `Upload-Length` and `Upload-Limit` (draft -04 and -05 on).
    var knowsLengthAndLimit: Bool { number >= 6 }

    /// `Upload-Limit` (an sf-dictionary): the largest object, and how long the upload resource
    /// lives from now (`expires` in interop 6, renamed `max-age` in 7); nil before interop 6.
    func limit(maxSize: Int64, lifetime: Int) -> (String, String)? {
        guard knowsLengthAndLimit else { return nil }
        return ("Upload-Limit", "max-size=\(maxSize), \(number == 6 ? "expires" : "max-age")=\(max(lifetime, 0))")
    }

    /// The header of every 104 (and of the gateway's other answers to a request of this
    /// version).
    var field: (String, String) { ("Upload-Draft-Interop-Version", String(number)) }

    /// A field of the request that is not what its draft says it is.
    struct InvalidField: Error, Equatable {
        let name: String
    }
}

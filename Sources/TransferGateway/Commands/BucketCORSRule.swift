import Foundation

/// The bucket CORS rule that pages on the allowed origins need to send presigned uploads and
/// reads straight to S3 (AWS S3, Cloudflare R2, MinIO, SeaweedFS all read it): the origins, the
/// methods a page uses on presigned URLs and form posts, any request header (the signed ones
/// vary), `ETag` and the S3 headers a page may read exposed (a page completes a multipart upload
/// with the ETags it saw), preflights cached for 50 minutes. Written as S3's XML
/// (`PutBucketCors`, `--apply`) or as the JSON `aws s3api put-bucket-cors` takes.
struct BucketCORSRule: Equatable {
    var origins: [String]
    var methods = ["GET", "HEAD", "PUT", "POST", "DELETE"]
    var allowedHeaders = ["*"]
    var exposedHeaders = ["ETag", "x-amz-version-id", "x-amz-request-id", "Content-Length", "Content-Range"]
    var maxAgeSeconds = 3000

    /// The whole `CORSConfiguration` document of S3's API.
    var xml: String {
        var xml = #"<CORSConfiguration xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><CORSRule>"#
        for origin in origins { xml += "<AllowedOrigin>\(Self.escape(origin))</AllowedOrigin>" }
        for method in methods { xml += "<AllowedMethod>\(method)</AllowedMethod>" }
        for header in allowedHeaders { xml += "<AllowedHeader>\(Self.escape(header))</AllowedHeader>" }
        for header in exposedHeaders { xml += "<ExposeHeader>\(Self.escape(header))</ExposeHeader>" }
        xml += "<MaxAgeSeconds>\(maxAgeSeconds)</MaxAgeSeconds></CORSRule></CORSConfiguration>"
        return xml
    }

    /// `{"CORSRules": [{…}]}`, the `--cors-configuration` of `aws s3api put-bucket-cors` (the AWS
    /// console's and R2 dashboard's CORS editors take the list inside `CORSRules`).
    var json: String {
        let rule: [String: Any] = [
            "AllowedOrigins": origins, "AllowedMethods": methods, "AllowedHeaders": allowedHeaders,
            "ExposeHeaders": exposedHeaders, "MaxAgeSeconds": maxAgeSeconds,
        ]
        let options: JSONSerialization.WritingOptions = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        guard let data = try? JSONSerialization.data(withJSONObject: ["CORSRules": [rule]], options: options) else { return "{}" }
        return String(decoding: data, as: UTF8.self)
    }

    static func escape(_ text: String) -> String {
        text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
            .replacingOccurrences(of: ">", with: "&gt;")
    }
}

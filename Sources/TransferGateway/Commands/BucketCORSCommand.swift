import Foundation

/// `transfer-gateway bucket-cors [--apply]`: the bucket CORS rule that pages on
/// `GATEWAY_CORS_ORIGINS` need to send presigned uploads and reads straight to S3 (AWS S3,
/// Cloudflare R2, MinIO, SeaweedFS all read it), exposing `ETag` so a page can complete a
/// multipart upload with the ETags it saw. Printed as S3's XML; with `--apply`, put on the bucket.
enum BucketCORSCommand {
    static func run(_ arguments: [String]) async {
        let apply: Bool
        switch arguments {
        case []: apply = false
        case ["--apply"]: apply = true
        default: Command.fail("usage: transfer-gateway bucket-cors [--apply]", code: 64)
        }
        let configuration = Command.configuration()
        guard !configuration.corsOrigins.isEmpty else {
            Command.fail("GATEWAY_CORS_ORIGINS: is required (the origins the bucket must allow)", code: 2)
        }
        let xml = rule(origins: configuration.corsOrigins)
        print(xml)
        guard apply else { return }
        do {
            try await configuration.makeS3Client().putBucketCors(xml: xml)
            FileHandle.standardError.write(Data("transfer-gateway: bucket CORS rule applied to \(configuration.s3Bucket ?? "")\n".utf8))
        } catch {
            Command.fail("the bucket refused its CORS rule: \(error)", code: 1)
        }
    }

    /// One rule: the origins, the methods a page uses on presigned URLs and form posts, any
    /// request header (the signed ones vary), `ETag` (and the S3 headers a page may read)
    /// exposed, preflights cached for 50 minutes.
    static func rule(origins: [String]) -> String {
        var xml = #"<CORSConfiguration xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><CORSRule>"#
        for origin in origins { xml += "<AllowedOrigin>\(escape(origin))</AllowedOrigin>" }
        for method in ["GET", "HEAD", "PUT", "POST", "DELETE"] { xml += "<AllowedMethod>\(method)</AllowedMethod>" }
        xml += "<AllowedHeader>*</AllowedHeader>"
        for header in ["ETag", "x-amz-version-id", "x-amz-request-id", "Content-Length", "Content-Range"] {
            xml += "<ExposeHeader>\(header)</ExposeHeader>"
        }
        xml += "<MaxAgeSeconds>3000</MaxAgeSeconds></CORSRule></CORSConfiguration>"
        return xml
    }

    static func escape(_ text: String) -> String {
        text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
            .replacingOccurrences(of: ">", with: "&gt;")
    }
}

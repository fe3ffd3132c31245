import Testing

@testable import S3

@Test func pathStyleEndpoint() throws {
    let e = try S3Endpoint.parse(url: "http://127.0.0.1:8333", bucket: "b", region: "us-east-1", pathStyle: nil, accelerate: false)
    #expect(e.style == .path && e.hostHeader == "127.0.0.1:8333")
    #expect(e.url(encodedPath: e.encodedPath(key: "dir/a b+c.txt")) == "http://127.0.0.1:8333/b/dir/a%20b%2Bc.txt")
    #expect(e.encodedPath(key: nil) == "/b")
}

@Test func awsDefaultsToVirtualHosted() throws {
    let e = try S3Endpoint.parse(url: nil, bucket: "photos", region: "eu-west-1", pathStyle: nil, accelerate: false)
    #expect(e.hostHeader == "photos.s3.eu-west-1.amazonaws.com")
    #expect(e.url(encodedPath: e.encodedPath(key: "k")) == "https://photos.s3.eu-west-1.amazonaws.com/k")
}

@Test func accelerateEndpoint() throws {
    let e = try S3Endpoint.parse(url: nil, bucket: "photos", region: "eu-west-1", pathStyle: nil, accelerate: true)
    #expect(e.hostHeader == "photos.s3-accelerate.amazonaws.com")
}

@Test func explicitVirtualHostedAndIPv6() throws {
    let v = try S3Endpoint.parse(url: "https://s3.example.com", bucket: "b", region: "r", pathStyle: false, accelerate: false)
    #expect(v.hostHeader == "b.s3.example.com" && v.encodedPath(key: "x") == "/x")
    let six = try S3Endpoint.parse(url: "http://[::1]:9000/", bucket: "b", region: "r", pathStyle: nil, accelerate: false)
    #expect(six.hostHeader == "[::1]:9000")
}

// A host or bucket a URL cannot hold is refused at start-up: presigned URLs are written into
// JSON answers unescaped.
@Test(arguments: [
    "127.0.0.1:8333", "ftp://x", "http://host:99999", "http://host/path", "http://",
    "http://ho\"st", "http://ho\\st:9000", "http://ho st", "http://h\u{7F}", "http://hé",
])
func badEndpointsAreRefused(url: String) {
    #expect(throws: S3Endpoint.ParseError.self) {
        _ = try S3Endpoint.parse(url: url, bucket: "b", region: "r", pathStyle: nil, accelerate: false)
    }
}

@Test(arguments: ["my\"bucket", "back\\slash", "with space", "tilde~", "ünï", "a/b"])
func badBucketNamesAreRefused(bucket: String) {
    #expect(throws: S3Endpoint.ParseError.self) {
        _ = try S3Endpoint.parse(url: "http://127.0.0.1:8333", bucket: bucket, region: "r", pathStyle: nil, accelerate: false)
    }
    #expect(throws: S3Endpoint.ParseError.self) {
        _ = try S3Endpoint.parse(url: nil, bucket: bucket, region: "r", pathStyle: nil, accelerate: true)
    }
}

@Test(arguments: ["", "eu-west-1\"", "us east", "r/1"])
func badRegionsAreRefused(region: String) {
    for url in [nil, "http://127.0.0.1:8333"] {
        #expect(throws: S3Endpoint.ParseError.self) {
            _ = try S3Endpoint.parse(url: url, bucket: "b", region: region, pathStyle: nil, accelerate: false)
        }
    }
}

@Test func errorVerdicts() {
    let xml = Array("<?xml version=\"1.0\"?><Error><Code>SlowDown</Code><Message>Reduce your rate</Message></Error>".utf8)
    let slow = S3Error.fromResponse(status: 503, body: xml)
    #expect(slow.code == "SlowDown" && slow.retryable && slow.message == "Reduce your rate")
    #expect(S3Error.fromResponse(status: 404, body: []).code == "NotFound")
    #expect(!S3Error.fromResponse(status: 403, body: []).retryable)
    #expect(S3Error.fromResponse(status: 500, body: []).retryable)
    let inPart = S3Error.fromResponse(status: 400, body: Array("<Error><Code>InvalidPart</Code></Error>".utf8))
    #expect(inPart.code == "InvalidPart" && !inPart.retryable)
    #expect(S3Error(kind: .transport, status: 0, code: "ConnectionReset", message: "").retryable)
}

@Test func completionThatFailsWithStatus200IsAnError() {
    let body = Array(
        "<?xml version=\"1.0\"?>\n<Error><Code>InternalError</Code><Message>We encountered an internal error.</Message></Error>".utf8)
    do {
        _ = try S3Client.completionETag(status: 200, body: body)
        Issue.record("a 200 with an Error body counted as success")
    } catch let error as S3Error {
        #expect(error.code == "InternalError" && error.status == 200 && error.retryable)
    } catch {
        Issue.record("\(error)")
    }
    let ok = Array(
        "<CompleteMultipartUploadResult xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><Location>x</Location><Bucket>b</Bucket><Key>k</Key><ETag>&quot;abc-3&quot;</ETag></CompleteMultipartUploadResult>"
            .utf8)
    #expect((try? S3Client.completionETag(status: 200, body: ok)) == "\"abc-3\"")
    #expect(throws: S3Error.self) { _ = try S3Client.completionETag(status: 200, body: Array("<html>".utf8)) }
}

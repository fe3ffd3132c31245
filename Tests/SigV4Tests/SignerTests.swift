import Testing

@testable import SigV4

// Fixtures from the Amazon S3 API Reference, "Signature Calculations for the Authorization
// Header" and "Authenticating Requests: Using Query Parameters": bucket `examplebucket`,
// access key AKIAIOSFODNN7EXAMPLE, secret wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY,
// 2013-05-24T00:00:00Z, us-east-1.
private let docCredentials = Credentials(
    accessKeyID: "AKIAIOSFODNN7EXAMPLE",
    secretAccessKey: "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY")
private let docTime = SigningTime(secondsSince1970: 1_369_353_600)
private let signer = Signer(credentials: docCredentials, region: "us-east-1")

@Test func signingTimeFormats() {
    #expect(docTime.date == "20130524")
    #expect(docTime.dateTime == "20130524T000000Z")
    #expect(SigningTime(secondsSince1970: 0).dateTime == "19700101T000000Z")
    #expect(SigningTime(secondsSince1970: 951_825_599).dateTime == "20000229T115959Z")
    #expect(SigningTime(secondsSince1970: 4_102_444_799).dateTime == "20991231T235959Z")
    #expect(SigningTime.iso8601(0) == "1970-01-01T00:00:00Z")
    #expect(SigningTime.iso8601(951_825_599) == "2000-02-29T11:59:59Z")
    #expect(SigningTime(secondsSince1970: 4_102_444_799).iso8601 == "2099-12-31T23:59:59Z")
}

@Test func documentationPresignedGet() {
    let query = signer.presignedQuery(
        method: "GET", encodedPath: "/test.txt", query: [],
        headers: [("Host", "examplebucket.s3.amazonaws.com")],
        expires: 86_400, time: docTime)
    let signature = query.first { $0.0 == "X-Amz-Signature" }?.1
    #expect(signature == "aeeed9bbccd4d02ee5c0109b86d86835f995330da4c265957d157751f604d404")
}

@Test func documentationHeaderSignedGetObject() {
    let added = signer.signedHeaders(
        method: "GET", encodedPath: "/test.txt", query: [],
        headers: [("Host", "examplebucket.s3.amazonaws.com"), ("Range", "bytes=0-9")],
        payloadHash: Signer.emptyPayloadHash, time: docTime)
    let authorization = added.first { $0.0 == "Authorization" }?.1 ?? ""
    #expect(authorization.hasSuffix("Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41"))
    #expect(authorization.contains("SignedHeaders=host;range;x-amz-content-sha256;x-amz-date"))
}

@Test func documentationHeaderSignedPutObject() {
    let payloadHash = "44ce7dd67c959e0d3524ffac1771dfbba87d2b6b4b4e99e42034a8b803f8b072"
    let added = signer.signedHeaders(
        method: "PUT", encodedPath: "/test%24file.text", query: [],
        headers: [
            ("Host", "examplebucket.s3.amazonaws.com"),
            ("Date", "Fri, 24 May 2013 00:00:00 GMT"),
            ("x-amz-storage-class", "REDUCED_REDUNDANCY"),
        ],
        payloadHash: payloadHash, time: docTime)
    let authorization = added.first { $0.0 == "Authorization" }?.1 ?? ""
    #expect(authorization.hasSuffix("Signature=98ad721746da40c64f1a55b78f14c238d841ea1380cd77a1b5971af0ece108bd"))
}

@Test func uriEncodingOfAwkwardKeys() {
    #expect(URIEncoding.encode("a b+c%d~e", encodeSlash: false) == "a%20b%2Bc%25d~e")
    #expect(URIEncoding.encode("dir/é.txt", encodeSlash: false) == "dir/%C3%A9.txt")
    #expect(URIEncoding.encode("a/b") == "a%2Fb")
    #expect(URIEncoding.encode("*'()!") == "%2A%27%28%29%21")
}

@Test func unreservedBytesAreExactlyTheDocumentedOnes() {
    let unreserved = Set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~".utf8)
    for value in 0...255 {
        let byte = UInt8(value)
        #expect(URIEncoding.isUnreserved(byte) == unreserved.contains(byte), "byte \(value)")
    }
    // Every byte through the encoder: kept as is, or %XY in upper case.
    let all = String(decoding: (0...127).map { UInt8($0) }, as: UTF8.self)
    let encoded = URIEncoding.encode(all)
    #expect(encoded.utf8.allSatisfy { URIEncoding.isUnreserved($0) || $0 == UInt8(ascii: "%") })
    #expect(encoded.removingPercentEncodingForTest == all)
}

@Test func byteBuiltPresignEqualsTheStagedOne() {
    let keys = ["plain", "with space", "ünï/日本", "a+b%c~d", "*'()!;,=&@$#[]"]
    for key in keys {
        let path = "/bucket/" + URIEncoding.encode(key, encodeSlash: false)
        let headers = [("Host", "127.0.0.1:9000"), ("Content-Type", "text/plain"), ("x-amz-meta-a", " spaced   out ")]
        let pairs = signer.presignedQuery(
            method: "PUT", encodedPath: path, query: [("partNumber", "3"), ("uploadId", "a/b+c")],
            headers: headers, expires: 600, time: docTime)
        let text = signer.presignedQueryString(
            method: "PUT", encodedPath: path, query: [("partNumber", "3"), ("uploadId", "a/b+c")],
            headers: headers, expires: 600, time: docTime)
        let signature = pairs.last { $0.0 == "X-Amz-Signature" }?.1 ?? "?"
        #expect(text.hasSuffix("&X-Amz-Signature=" + signature), "\(key)")
        #expect(
            Set(text.split(separator: "&").map(String.init)) == Set(pairs.map { URIEncoding.encode($0.0) + "=" + URIEncoding.encode($0.1) })
        )
    }
    #expect(docTime.iso8601 == "2013-05-24T00:00:00Z")
}

@Test func aPathAlreadyInTheBufferSignsLikeTheSamePathGivenApart() {
    // Part URLs carry a query (partNumber, uploadId); temporary credentials add a token.
    let withToken = Signer(
        credentials: Credentials(
            accessKeyID: "AKIDEXAMPLE", secretAccessKey: "secret",
            sessionToken: "tok/en+=="), region: "eu-west-1")
    for signer in [signer, withToken] {
        for query in [[], [("partNumber", "3"), ("uploadId", "a/b+c")]] {
            for key in ["plain", "with space/ünï", "a+b%c~d"] {
                let path = "/bucket/" + URIEncoding.encode(key, encodeSlash: false)
                let headers = [("Host", "127.0.0.1:9000"), ("Content-Type", "text/plain")]
                let apart = signer.presignedQueryString(
                    method: "PUT", encodedPath: path, query: query, headers: headers,
                    expires: 600, time: docTime)
                var buffer = Array("http://127.0.0.1:9000".utf8)
                let start = buffer.count
                buffer.append(contentsOf: path.utf8)
                let range = start..<buffer.count
                buffer.append(UInt8(ascii: "?"))
                let queryStart = buffer.count
                signer.appendPresignedQuery(
                    to: &buffer, method: "PUT", encodedPathIn: range, query: query, headers: headers,
                    expires: 600, time: docTime)
                #expect(String(decoding: buffer[queryStart...], as: UTF8.self) == apart, "\(key) \(query)")
            }
        }
    }
}

@Test func trimAllFoldsTabsLikeSpaces() {
    #expect(CanonicalRequest.trimAll("a\tb") == "a b")
    #expect(CanonicalRequest.trimAll(" a\tb ") == "a b")
    #expect(CanonicalRequest.trimAll("a  b") == "a b")
    #expect(CanonicalRequest.trimAll("plain") == "plain")
}

extension String {
    /// Percent-decoding, written out so the test does not lean on Foundation's.
    var removingPercentEncodingForTest: String {
        var out: [UInt8] = []
        var bytes = Array(utf8)[...]
        while let byte = bytes.popFirst() {
            if byte == UInt8(ascii: "%"), bytes.count >= 2, let value = UInt8(String(decoding: bytes.prefix(2), as: UTF8.self), radix: 16) {
                out.append(value)
                bytes = bytes.dropFirst(2)
            } else {
                out.append(byte)
            }
        }
        return String(decoding: out, as: UTF8.self)
    }
}

@Test func cachedSigningKeysAreTheDerivedOnes() async {
    // One cache across days, regions and rotated secrets, from many threads at once: every key
    // it gives signs as the one derived from scratch.
    let cache = SigningKeyCache()
    await withTaskGroup(of: Bool.self) { group in
        for task in 0..<16 {
            group.addTask {
                var allEqual = true
                for round in 0..<50 {
                    let secret = (task + round) % 3 == 0 ? "secret-a" : "secret-b"
                    let region = round % 2 == 0 ? "us-east-1" : "eu-west-1"
                    let time = SigningTime(secondsSince1970: 1_700_000_000 + (round % 3) * 86_400)
                    let credentials = Credentials(accessKeyID: "AKID", secretAccessKey: secret, sessionToken: nil)
                    let cached = Signer(credentials: credentials, region: region, keyCache: cache)
                    let fresh = Signer(credentials: credentials, region: region)
                    let text = "AWS4-HMAC-SHA256\n\(time.dateTime)\n\(fresh.scope(time))\n\(task)-\(round)"
                    allEqual = allEqual && cached.signature(text, time: time) == fresh.signature(text, time: time)
                }
                return allEqual
            }
        }
        for await allEqual in group { #expect(allEqual) }
    }
}

import Testing

@testable import SigV4

// The one-pass presign (no query of the caller's) against the staged one built from a
// `CanonicalRequest`: the same query, to the byte, for every header list either path takes.

private let time = SigningTime(secondsSince1970: 1_765_000_000)
private let plainSigner = Signer(credentials: Credentials(accessKeyID: "AKIDPLAIN", secretAccessKey: "secret"), region: "eu-west-1")
private let tokenSigner = Signer(
    credentials: Credentials(
        accessKeyID: "AKID/TOKEN", secretAccessKey: "other", sessionToken: "tok/en+== " + String(repeating: "x", count: 900)),
    region: "us-east-1", keyCache: SigningKeyCache())

/// What the staged path gives: its pairs (signature last), encoded and joined in their order.
private func staged(_ signer: Signer, path: String, headers: [(String, String)]) -> String {
    signer.presignedQuery(method: "PUT", encodedPath: path, query: [], headers: headers, expires: 3000, time: time)
        .map { URIEncoding.encode($0.0) + "=" + URIEncoding.encode($0.1) }
        .joined(separator: "&")
}

private func onePass(_ signer: Signer, path: String, headers: [(String, String)]) -> String? {
    var out: [UInt8] = Array("https://h".utf8)
    let taken = signer.appendPlainPresignedQuery(
        to: &out, method: "PUT", path: .text(path), headers: headers, expires: 3000, time: time)
    return taken ? String(decoding: out.dropFirst(9), as: UTF8.self) : nil
}

private let plainLists: [[(String, String)]] = [
    [("Host", "127.0.0.1:8333")],
    [("Host", "bucket.example.com"), ("Content-Type", "image/jpeg")],
    [("Content-Type", "image/jpeg"), ("Host", "bucket.example.com")],
    [
        ("Host", "h"), ("X-Amz-Meta-Zeta", "z"), ("x-amz-meta-alpha", "a b"), ("Content-MD5", "1B2M2Y8AsgTpgAmY7PhCfg=="),
        ("Content-Length", "0"), ("If-None-Match", "*"), ("Cache-Control", "no-cache"), ("content-disposition", "attachment"),
    ],
    [("Host", "h"), ("x-amz-meta-odd!name", "é ünïcode"), ("x-amz-meta-empty", "")],
    [("Host", "h"), ("x-amz-meta-long", String(repeating: "v", count: 5000))],
]

@Test func onePassPresignEqualsTheStagedOne() throws {
    for signer in [plainSigner, tokenSigner] {
        for path in [
            "", "/bucket/photos/holiday.jpg",
            "/b/" + URIEncoding.encode("ünï cöde/" + String(repeating: "k", count: 1000), encodeSlash: false),
        ] {
            for headers in plainLists {
                let written = try #require(onePass(signer, path: path, headers: headers), "\(headers.map(\.0))")
                #expect(written == staged(signer, path: path, headers: headers), "\(headers.map(\.0)) \(path.prefix(20))")
            }
        }
    }
}

@Test func headerListsTheOnePassLeavesAreSignedInStagesTheSame() {
    // A name twice (any case), a value with white space to trim, a name beyond ASCII.
    let others: [[(String, String)]] = [
        [("Host", "h"), ("x-amz-meta-a", "1"), ("X-Amz-Meta-A", "2")],
        [("Host", "h"), ("x-amz-meta-a", " padded  value ")],
        [("Host", "h"), ("x-amz-meta-a", "tab\there")],
        [("Host", "h"), ("x-amz-meta-é", "v")],
    ]
    for headers in others {
        #expect(onePass(plainSigner, path: "/b/k", headers: headers) == nil, "\(headers.map(\.0))")
        let text = plainSigner.presignedQueryString(
            method: "PUT", encodedPath: "/b/k", query: [], headers: headers, expires: 3000, time: time)
        #expect(text == staged(plainSigner, path: "/b/k", headers: headers))
    }
}

@Test func aHostGivenApartSignsAsTheFirstHeader() {
    // One pass and staged (a value to trim; a second Host) alike: `host` is `("Host", host)`
    // ahead of the headers.
    let lists: [[(String, String)]] = [
        [], [("Content-Type", "image/jpeg")], [("x-amz-meta-a", " trim  me ")], [("host", "other")],
        [("X-Amz-Meta-Z", "z"), ("content-md5", "1B2M2Y8AsgTpgAmY7PhCfg==")],
    ]
    for signer in [plainSigner, tokenSigner] {
        for headers in lists {
            var buffer = Array("https://bucket.example.com".utf8)
            let pathStart = buffer.count
            buffer += Array("/b/k".utf8)
            let path = pathStart..<buffer.count
            buffer.append(UInt8(ascii: "?"))
            let start = buffer.count
            signer.appendPresignedQuery(
                to: &buffer, method: "PUT", encodedPathIn: path, query: [], host: "bucket.example.com", headers: headers,
                expires: 3000, time: time)
            let expected = staged(signer, path: "/b/k", headers: [("Host", "bucket.example.com")] + headers)
            #expect(String(decoding: buffer[start...], as: UTF8.self) == expected, "\(headers.map(\.0))")
        }
    }
}

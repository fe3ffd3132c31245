import Crypto
import Foundation
import Testing

@testable import SigV4

// AWS's SigV4 test suite (awslabs/aws-c-auth, tests/aws-signing-test-suite/v4), copied as
// stored in Fixtures/v4 — see Fixtures/PROVENANCE.md for commits and the cases whose stored
// files disagree with each other. Each signed request (header and query variants) is parsed,
// its signature and `Authorization`/`X-Amz-Signature` removed, and signed again with our
// stages; the result must equal the stored signature. Where the stored canonical request and
// string to sign exist, stages 1 and 2 are compared too.

private let fixtureRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures/v4")

private struct SuiteContext {
    var accessKey = "AKIDEXAMPLE"
    var secret = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"
    var region = "us-east-1"
    var service = "service"
    var time = SigningTime(secondsSince1970: 1_440_938_160)  // 2015-08-30T12:36:00Z
    var normalize = true
    var signedBodyValue: String?
    var sessionToken: String?

    init(caseName: String) {
        // Most stored cases lack context.json; the suite pairs "-normalized" and "-unnormalized"
        // cases that differ only in the context's "normalize" flag.
        normalize = !caseName.hasSuffix("-unnormalized")
        let url = fixtureRoot.appendingPathComponent(caseName).appendingPathComponent("context.json")
        guard let data = try? Data(contentsOf: url),
            let json = try? JSONSerialization.jsonObject(with: data) as? [String: Any]
        else { return }
        if let credentials = json["credentials"] as? [String: Any] {
            accessKey = credentials["access_key_id"] as? String ?? accessKey
            secret = credentials["secret_access_key"] as? String ?? secret
            sessionToken = credentials["token"] as? String
        }
        region = json["region"] as? String ?? region
        service = json["service"] as? String ?? service
        normalize = json["normalize"] as? Bool ?? normalize
        if json["sign_body"] as? Bool == true { signedBodyValue = json["signed_body_value"] as? String }
    }
}

/// A request as written in a `*-signed-request.txt` file.
private struct WrittenRequest {
    var method: String
    var path: String
    var query: [(String, String)]
    var headers: [(String, String)]
    var body: [UInt8]

    init?(_ text: String) {
        let blank = text.range(of: "\n\n") ?? (text.endIndex..<text.endIndex)
        let head = text[..<blank.lowerBound]
        body = Array(text[blank.upperBound...].utf8)
        var lines = head.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        guard !lines.isEmpty else { return nil }
        let requestLine = lines.removeFirst()
        guard let firstSpace = requestLine.firstIndex(of: " "), let lastSpace = requestLine.lastIndex(of: " "),
            firstSpace < lastSpace
        else { return nil }
        method = String(requestLine[..<firstSpace])
        let target = String(requestLine[requestLine.index(after: firstSpace)..<lastSpace])
        if let q = target.firstIndex(of: "?") {
            path = String(target[..<q])
            query = target[target.index(after: q)...].split(separator: "&", omittingEmptySubsequences: true).map { pair in
                let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
                let name = String(parts[0]).removingPercentEncoding ?? String(parts[0])
                let value = parts.count > 1 ? (String(parts[1]).removingPercentEncoding ?? String(parts[1])) : ""
                return (name, value)
            }
        } else {
            path = target
            query = []
        }
        headers = []
        for line in lines {
            if let first = line.first, first == " " || first == "\t", !headers.isEmpty {
                // A folded continuation line: the suite's canonical form joins the pieces with ','.
                let piece = line.trimmingCharacters(in: .whitespaces)
                headers[headers.count - 1].1 += "," + piece
                continue
            }
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers.append((String(line[..<colon]), String(line[line.index(after: colon)...])))
        }
    }

    func header(_ name: String) -> String? { headers.first { $0.0.lowercased() == name }?.1 }
}

private func read(_ caseName: String, _ file: String) -> String? {
    try? String(contentsOf: fixtureRoot.appendingPathComponent(caseName).appendingPathComponent(file), encoding: .utf8)
}

private func allCases() -> [String] {
    ((try? FileManager.default.contentsOfDirectory(atPath: fixtureRoot.path)) ?? []).sorted()
}

/// Query cases left out, each for a stated reason (PROVENANCE.md has the details):
/// - get-space-normalized, post-vanilla-empty-query-value: the stored signature was made from
///   other inputs than the stored request (files from different suite versions), so no signer
///   can match it;
/// - get-vanilla-utf8-query: the stored version sorts the query by raw bytes, an aws-c-auth
///   behaviour later changed to AWS's documented rule (sort by encoded name), which we follow
///   and which botocore's URLs confirm (Tests/S3Tests/BotocorePresignTests.swift).
private let inconsistentQueryCases: Set<String> = ["get-space-normalized", "post-vanilla-empty-query-value", "get-vanilla-utf8-query"]

struct SuiteCase: Sendable, CustomTestStringConvertible {
    let name: String
    var testDescription: String { name }
}

private let headerCases = allCases().filter { read($0, "header-signed-request.txt") != nil }.map(SuiteCase.init)
private let queryCases = allCases().filter { read($0, "query-signed-request.txt") != nil && !inconsistentQueryCases.contains($0) }
    .map(SuiteCase.init)

@Test func theSuiteIsThere() {
    #expect(headerCases.count >= 30, "header cases: \(headerCases.count)")
    #expect(queryCases.count >= 30, "query cases: \(queryCases.count)")
}

@Test(arguments: headerCases)
func headerSignedRequestMatches(_ c: SuiteCase) throws {
    let context = SuiteContext(caseName: c.name)
    let text = try #require(read(c.name, "header-signed-request.txt"))
    let request = try #require(WrittenRequest(text))
    let authorization = try #require(request.header("authorization"))
    let signedList = try #require(authorization.components(separatedBy: "SignedHeaders=").last?.components(separatedBy: ",").first)
    let signedNames = signedList.split(separator: ";").map(String.init)
    let expected = try #require(authorization.components(separatedBy: "Signature=").last)
    let headers = request.headers.filter { signedNames.contains($0.0.lowercased()) }
    expectStages(c.name, variant: "header", request: request, headers: headers, context: context, signature: expected)
}

@Test(arguments: queryCases)
func querySignedRequestMatches(_ c: SuiteCase) throws {
    let context = SuiteContext(caseName: c.name)
    let text = try #require(read(c.name, "query-signed-request.txt"))
    var request = try #require(WrittenRequest(text))
    let signatureIndex = try #require(request.query.firstIndex { $0.0 == "X-Amz-Signature" })
    let expected = request.query[signatureIndex].1
    request.query.removeSubrange(signatureIndex...)  // the suite repeats the token after the signature
    let signedNames = (request.query.first { $0.0 == "X-Amz-SignedHeaders" }?.1 ?? "host").split(separator: ";").map(String.init)
    var headers = request.headers.filter { signedNames.contains($0.0.lowercased()) }
    // The suite's query variant may sign the session token as a header as well as carry it in
    // the query; the written request shows it only in the query.
    if signedNames.contains("x-amz-security-token"), !headers.contains(where: { $0.0.lowercased() == "x-amz-security-token" }),
        let token = request.query.first(where: { $0.0 == "X-Amz-Security-Token" })?.1
    {
        headers.append(("x-amz-security-token", token))
    }
    expectStages(c.name, variant: "query", request: request, headers: headers, context: context, signature: expected)
}

/// Signs `request` with our stages and compares each with what the case stores. The suite signs
/// bodies only when its context says so; otherwise the payload hash is that of the empty
/// string, whatever the request carries.
private func expectStages(
    _ name: String, variant: String, request: WrittenRequest, headers: [(String, String)],
    context: SuiteContext, signature expected: String
) {
    let payloadHash = context.signedBodyValue ?? Signer.emptyPayloadHash
    let canonical = CanonicalRequest(
        method: request.method,
        encodedPath: CanonicalURI.generic(path: request.path, normalize: context.normalize),
        query: request.query, headers: headers, payloadHash: payloadHash)
    let signer = Signer(
        credentials: Credentials(accessKeyID: context.accessKey, secretAccessKey: context.secret),
        region: context.region, service: context.service)
    if let stored = read(name, "\(variant)-canonical-request.txt") { #expect(canonical.text == stored, "canonical request") }
    let stringToSign = signer.stringToSign(canonical, time: context.time)
    if let stored = read(name, "\(variant)-string-to-sign.txt") { #expect(stringToSign == stored, "string to sign") }
    #expect(signer.signature(stringToSign, time: context.time) == expected)
}

@Test func pathNormalization() {
    #expect(CanonicalURI.normalized("//example//") == "/example/")
    #expect(CanonicalURI.normalized("/./example") == "/example")
    #expect(CanonicalURI.normalized("/example/..") == "/")
    #expect(CanonicalURI.normalized("/example1/example2/../..") == "/")
    #expect(CanonicalURI.normalized("/a/./b/../c/") == "/a/c/")
    #expect(CanonicalURI.generic(path: "/example space/", normalize: true) == "/example%20space/")
}

import Foundation
import HTTPServer
import Testing

@testable import Gateway

/// Builds a responder with the operations routes and the given checks, logging into memory.
func makeResponder(checks: [any DependencyCheck] = [], cors: [String] = [], sink: MemorySink = MemorySink()) -> GatewayResponder {
    var router = Router<GatewayRoute>()
    let metrics = Metrics()
    OperationsRoutes(
        context: RouteRig.context(metrics: metrics), readiness: Readiness(checks: checks, timeout: 1),
        openAPI: Array("openapi: 3.1.0\n".utf8)
    )
    .register(in: &router)
    return GatewayResponder(
        router: router, cors: CORS(origins: cors), logger: Logger(level: .info, sink: sink),
        metrics: metrics, instancePrefix: "t-")
}

func request(_ method: String, _ target: String, headers: [(String, String)] = []) -> HTTPRequest {
    var parser = HTTPHeadParser()
    var text = "\(method) \(target) HTTP/1.1\r\nHost: test\r\n"
    for (name, value) in headers { text += "\(name): \(value)\r\n" }
    text += "\r\n"
    let bytes = Array(text.utf8)
    guard case .complete(let head, _) = bytes.withUnsafeBytes({ parser.parse($0) }) else { fatalError("bad test request") }
    return HTTPRequest(head: head, body: .empty(), remoteAddress: "127.0.0.1:1")
}

func body(_ response: HTTPResponse) -> String {
    if case .bytes(let bytes) = response.body { return String(decoding: bytes, as: UTF8.self) }
    return ""
}

struct FixedCheck: DependencyCheck {
    let name: String
    let failure: String?
    func check(timeout: Int) async -> String? { failure }
}

@Test func healthzAnswersOK() async {
    let response = await makeResponder().respond(to: request("GET", "/healthz"))
    #expect(response.status == 200 && body(response) == "{\"status\":\"ok\"}")
    #expect(response.headers["x-request-id"]?.hasPrefix("t-") == true)
}

@Test func readyzReportsEachDependency() async {
    let ready = await makeResponder(checks: [FixedCheck(name: "postgres", failure: nil), FixedCheck(name: "s3", failure: nil)])
        .respond(to: request("GET", "/readyz"))
    #expect(ready.status == 200)
    #expect(body(ready).contains("\"postgres\":\"ok\"") && body(ready).contains("\"s3\":\"ok\""))
    let notReady = await makeResponder(checks: [FixedCheck(name: "postgres", failure: "unreachable"), FixedCheck(name: "s3", failure: nil)])
        .respond(to: request("GET", "/readyz"))
    #expect(notReady.status == 503)
    #expect(notReady.headers["content-type"] == "application/problem+json")
    let json = try? JSONSerialization.jsonObject(with: Data(body(notReady).utf8)) as? [String: Any]
    #expect(json?["code"] as? String == "not_ready")
    #expect((json?["checks"] as? [String: String])?["postgres"] == "unreachable")
}

@Test func unknownRoutesAndMethodsAreProblems() async {
    let responder = makeResponder()
    let missing = await responder.respond(to: request("GET", "/nope"))
    #expect(missing.status == 404 && body(missing).contains("\"code\":\"not_found\""))
    let wrongMethod = await responder.respond(to: request("DELETE", "/healthz"))
    #expect(wrongMethod.status == 405 && wrongMethod.headers["allow"] == "GET")
}

@Test func metricsCountRequestsByRoutePattern() async {
    let responder = makeResponder()
    _ = await responder.respond(to: request("GET", "/healthz"))
    _ = await responder.respond(to: request("GET", "/nope/\(UUID())"))
    let metrics = body(await responder.respond(to: request("GET", "/metrics")))
    #expect(metrics.contains("gateway_http_requests_total{route=\"/healthz\",method=\"GET\",status=\"200\"} 1"))
    #expect(metrics.contains("route=\"unmatched\""))
    #expect(!metrics.contains("/nope/"), "raw paths must not become label values")
    #expect(metrics.contains("gateway_http_request_duration_seconds_bucket{route=\"/healthz\",le=\"+Inf\"} 1"))
}

@Test func corsPreflightAndResponseHeaders() async {
    let responder = makeResponder(cors: ["https://app.example.com"])
    let preflight = await responder.respond(
        to: request(
            "OPTIONS", "/v1/presign",
            headers: [
                ("Origin", "https://app.example.com"), ("Access-Control-Request-Method", "POST"),
                ("Access-Control-Request-Headers", "authorization, content-type"),
            ]))
    #expect(preflight.status == 200)
    #expect(preflight.headers["access-control-allow-origin"] == "https://app.example.com")
    #expect(preflight.headers["access-control-allow-headers"]?.lowercased().contains("authorization") == true)
    let denied = await responder.respond(
        to: request(
            "OPTIONS", "/v1/presign",
            headers: [
                ("Origin", "https://evil.example"), ("Access-Control-Request-Method", "POST"),
            ]))
    #expect(denied.status == 403 && denied.headers["access-control-allow-origin"] == nil)
    let simple = await responder.respond(to: request("GET", "/healthz", headers: [("Origin", "https://app.example.com")]))
    #expect(simple.headers["access-control-allow-origin"] == "https://app.example.com")
    #expect(simple.headers["access-control-expose-headers"]?.contains("Upload-Offset") == true)
    let other = await responder.respond(to: request("GET", "/healthz", headers: [("Origin", "https://evil.example")]))
    #expect(other.headers["access-control-allow-origin"] == nil)
}

@Test func oneJSONLogLinePerRequestWithoutSecrets() async throws {
    let sink = MemorySink()
    let responder = makeResponder(sink: sink)
    _ = await responder.respond(to: request("GET", "/healthz?token=abc.def.ghi", headers: [("Authorization", "Bearer abc.def.ghi")]))
    #expect(sink.all.count == 1)
    let line = try #require(sink.all.first)
    let json = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
    #expect(json?["msg"] as? String == "request")
    #expect(json?["status"] as? Int == 200)
    #expect(json?["route"] as? String == "/healthz")
    #expect(!line.contains("abc.def.ghi"), "tokens must never be logged")
}

@Test func openAPIIsServed() async {
    let response = await makeResponder().respond(to: request("GET", "/openapi.yaml"))
    #expect(response.status == 200 && body(response).hasPrefix("openapi:"))
}

@Test func logStringsAreEscaped() {
    var text = JSONText()
    text.begin()
    text.field("m", .string("a\"b\\c\nd\u{1}"))
    text.end()
    #expect(String(decoding: text.bytes, as: UTF8.self) == "{\"m\":\"a\\\"b\\\\c\\nd\\u0001\"}")
}

@Test func theEightByteEscapeTestMissesNoByteInAnyLane() {
    for byte in 0...255 {
        let special = byte < 0x20 || byte == 0x22 || byte == 0x5C || byte == 0x7F
        for lane in 0..<8 {
            var word: UInt64 = 0x6161_6161_6161_6161  // "aaaaaaaa"
            word &= ~(UInt64(0xFF) << (8 * lane))
            word |= UInt64(byte) << (8 * lane)
            #expect(JSONText.mayNeedEscape(word) == special, "byte \(byte) in lane \(lane)")
        }
    }
}

@Test func longStringsRoundTripWhereverTheSpecialByteSits() throws {
    for special in ["\"", "\\", "\n", "\u{1}", "\u{7F}", "é", "€"] {
        for length in [0, 1, 7, 8, 9, 15, 16, 17, 40] {
            for at in 0...length {
                var plain = String(repeating: "x", count: length)
                plain.insert(contentsOf: special, at: plain.index(plain.startIndex, offsetBy: at))
                var text = JSONText()
                text.begin()
                text.field("v", .string(plain))
                text.end()
                let decoded = try JSONSerialization.jsonObject(with: Data(text.bytes)) as? [String: String]
                #expect(decoded?["v"] == plain, "\(special) at \(at) of \(length)")
            }
        }
    }
}

/// Every problem code the gateway can answer is listed in openapi.yaml's `Problem.code` enum.
@Test func everyProblemCodeIsDocumented() throws {
    let path = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../openapi.yaml").standardizedFileURL
    let document = try String(contentsOf: path, encoding: .utf8)
    for (code, _) in APIError.catalogue {
        #expect(document.contains("            - \(code)\n"), "\(code) is not in the Problem.code enum")
    }
}

@Test func jsonStringsMustBeValidUTF8() throws {
    func parse(_ bytes: [UInt8]) -> JSONValue? { try? JSONValue.parse(bytes) }
    let quote = UInt8(ascii: "\"")
    #expect(parse([quote] + Array("héllo €".utf8) + [quote]) == .string("héllo €"))
    // Invalid sequences, among them a truncated four-byte one whose repair has the same length.
    for bad: [UInt8] in [[0xFF], [0xC3], [0xE0, 0x80, 0x80], [0xF1, 0x80, 0x80, 0x41], [0xED, 0xA0, 0x80]] {
        #expect(parse([quote] + bad + [quote]) == nil, "\(bad)")
        #expect(parse([quote, UInt8(ascii: "\\"), UInt8(ascii: "n")] + bad + [quote]) == nil, "escaped, then \(bad)")
    }
}

@Test func jsonObjectsRefuseDuplicateKeysSmallAndLarge() throws {
    func object(_ count: Int, duplicate: Bool) -> [UInt8] {
        var keys = (0..<count).map { "\"k\($0)\":\($0)" }
        if duplicate { keys.append("\"k\(count / 2)\":0") }
        return Array(("{" + keys.joined(separator: ",") + "}").utf8)
    }
    for count in [1, 15, 16, 17, 200] {
        let parsed = try JSONValue.parse(object(count, duplicate: false))
        guard case .object(let members) = parsed else { Issue.record("not an object"); continue }
        #expect(members.count == count && members["k\(count - 1)"] == .number(Double(count - 1)) && members["nope"] == nil)
        #expect(throws: JSONValue.SyntaxError.self) { try JSONValue.parse(object(count, duplicate: true)) }
    }
    // Keys Swift calls equal though their bytes differ ("K" and KELVIN SIGN) are one key, on
    // both sides of the index built past 16 keys (this once trapped the process).
    for count in [2, 16, 17, 40] {
        let keys = ["\"K\":0", "\"\u{212A}\":1"] + (0..<count).map { "\"k\($0)\":\($0)" }
        #expect(throws: JSONValue.SyntaxError.self) { try JSONValue.parse(Array(("{" + keys.joined(separator: ",") + "}").utf8)) }
        let reversed = (0..<count).map { "\"k\($0)\":\($0)" } + ["\"K\":0", "\"\u{212A}\":1"]
        #expect(throws: JSONValue.SyntaxError.self) { try JSONValue.parse(Array(("{" + reversed.joined(separator: ",") + "}").utf8)) }
    }
    // A field looked up by its ASCII name is found under a key Swift calls equal whose bytes
    // (and length) differ, as before lookups compared lengths first; lengths tell ASCII keys apart.
    let lookalike = try JSONValue.parse(Array("{\"kms\u{212A}eyId\":\"k\",\"key\":\"v\"}".utf8))
    guard case .object(let lookalikeMembers) = lookalike else { Issue.record("not an object"); return }
    #expect(lookalikeMembers["kmsKeyId"] == .string("k") && lookalikeMembers["key"] == .string("v"))
    #expect(lookalikeMembers["ke"] == nil && lookalikeMembers["keys"] == nil && lookalikeMembers["kmsKeyI"] == nil)
    #expect(try JSONValue.parse(Array(#"{"a":1,"b":[true,null]}"#.utf8)) == JSONValue.parse(Array(#"{"b":[true,null],"a":1}"#.utf8)))
    #expect(try JSONValue.parse(Array(#"{"a":1}"#.utf8)) != JSONValue.parse(Array(#"{"a":2}"#.utf8)))
}

@Test func jsonBodiesAreKnownByTheirMediaType() async throws {
    for json in ["application/json", "Application/JSON", "application/json; charset=utf-8", "APPLICATION/JSON;charset=UTF-8"] {
        #expect(Responses.isJSON(json), "\(json)")
    }
    for other in ["", "application/jso", "text/plain", "application/xml", "applicatión/json", "multipart/form-data; boundary=x"] {
        #expect(!Responses.isJSON(other), "\(other)")
    }
    // Through the reader: another media type is 415, before the body is looked at.
    let plain = request("POST", "/v1/presign", headers: [("Content-Type", "text/plain")])
    await #expect(throws: APIError.self) { _ = try await Responses.fields(from: plain, known: []) }
    do {
        _ = try await Responses.fields(from: plain, known: [])
    } catch let error as APIError {
        #expect(error.status == 415)
    }
}

@Test func headerValuesClientsSendOrTheGatewaySignsAreCheckedAlike() throws {
    for good in ["text/plain", "a", " padded ", "two  spaces", String(repeating: "x", count: 1024)] {
        #expect(throws: Never.self, "\(good)") { try HeaderRules.checkValue(good, field: "f") }
    }
    // Found by schemathesis: a metadata value of one space was signed as "" and dropped by curl,
    // so S3 refused the signature and the gateway answered 500.
    for bad in ["", " ", "   ", "caf\u{E9}", "a\tb", "a\nb", String(repeating: "x", count: 1025)] {
        #expect(throws: APIError.self, "\(bad.debugDescription)") { try HeaderRules.checkValue(bad, field: "f") }
    }
    #expect(throws: APIError.self) { _ = try HeaderRules.metadataHeaders(["Lk": " "]) }
    #expect(Set(try HeaderRules.metadataHeaders(["B": "2", "a": "1"]).map(\.0)) == ["x-amz-meta-a", "x-amz-meta-b"])
}

/// The request line holds at most 256 bytes of the path, cut where a character starts, and
/// writes numbers without building strings: every line parses as JSON with the same figures.
@Test func theRequestLineCutsLongPathsOnACharacterBoundary() throws {
    let sink = MemorySink()
    let logger = Logger(level: .info, sink: sink)
    let long = "/v1/" + String(repeating: "a", count: 251) + "é" + String(repeating: "b", count: 100)
    logger.request(
        id: "x-1", method: "GET", route: "/v1/{rest}", path: long[...], status: 404, microseconds: 1_234_567, remote: "127.0.0.1:9")
    logger.request(id: "x-2", method: "GET", route: "/q", path: "/q\"\\\u{1}"[...], status: 200, microseconds: 0, remote: "[::1]:9")
    #expect(sink.all.count == 2)
    let first = try #require(try JSONSerialization.jsonObject(with: Data(sink.all[0].utf8)) as? [String: Any])
    #expect(first["path"] as? String == "/v1/" + String(repeating: "a", count: 251), "the é (bytes 256–257) is left out whole")
    #expect(first["status"] as? Int == 404 && (first["durationMs"] as? Double) == 1234.567)
    let second = try #require(try JSONSerialization.jsonObject(with: Data(sink.all[1].utf8)) as? [String: Any])
    #expect(second["path"] as? String == "/q\"\\\u{1}" && second["durationMs"] as? Double == 0)
}

/// A buffering sink (as stderr's) has the request line written at the end of what it holds.
@Test func theRequestLineIsWrittenAfterWhatABufferingSinkHolds() throws {
    final class Buffering: LogSink, @unchecked Sendable {
        var bytes = Array("earlier\n".utf8)
        func write(_ line: [UInt8]) { bytes += line }
        func write(building build: (inout [UInt8]) -> Void) { build(&bytes) }
    }
    let sink = Buffering()
    let logger = Logger(level: .info, sink: sink)
    logger.request(id: "x-1", method: "GET", route: "/a", path: "/a"[...], status: 200, microseconds: 5, remote: "1.2.3.4:5")
    logger.request(id: "x-2", method: "PUT", route: "/b", path: "/b"[...], status: 201, microseconds: 6, remote: "1.2.3.4:5")
    let lines = String(decoding: sink.bytes, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false)
    #expect(lines.count == 4 && lines[0] == "earlier" && lines[3].isEmpty)
    let ids = try lines[1...2].map { line in
        try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])["requestId"] as? String
    }
    #expect(ids == ["x-1", "x-2"])
}

/// `/healthz` is answered at once, on the event loop, with everything an answer gets (request
/// id, metrics, log line); routes that wait, and HEAD, go the usual way.
@Test func healthzIsAnsweredAtOnceWithWhatEveryAnswerGets() async {
    let sink = MemorySink()
    let responder = makeResponder(sink: sink)
    let now = responder.respondAtOnce(to: request("GET", "/healthz"))
    #expect(now?.status == 200 && now.map(body) == "{\"status\":\"ok\"}")
    #expect(now?.headers["x-request-id"]?.hasPrefix("t-") == true)
    #expect(sink.all.contains { $0.contains("\"route\":\"/healthz\"") && $0.contains("\"status\":200") })
    #expect(responder.respondAtOnce(to: request("GET", "/readyz")) == nil)
    #expect(responder.respondAtOnce(to: request("HEAD", "/healthz")) == nil)
    #expect(responder.respondAtOnce(to: request("GET", "/nope")) == nil)
    let metrics = body(await responder.respond(to: request("GET", "/metrics")))
    #expect(metrics.contains("gateway_http_requests_total{route=\"/healthz\",method=\"GET\",status=\"200\"} 1"))
}

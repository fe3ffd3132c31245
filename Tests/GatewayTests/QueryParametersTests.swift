import Foundation
import HTTPServer
import TestSupport
import Testing

@testable import Gateway

/// One rule on the query for every route: a parameter named twice is 400, as is a pair that is
/// not percent-encoded UTF-8.
@Suite struct QueryParametersTests {
    struct Case: Sendable, CustomTestStringConvertible {
        let query: String
        /// The parameters read, or the code refused with.
        let expected: Result<[String: String], APIError>
        var testDescription: String { "?\(query)" }
    }

    static let cases: [Case] = [
        .init(query: "", expected: .success([:])),
        .init(query: "type=copy", expected: .success(["type": "copy"])),
        .init(query: "type=copy&state=queued&&limit=", expected: .success(["type": "copy", "state": "queued", "limit": ""])),
        .init(query: "prefix=a+b%2Bc%20d", expected: .success(["prefix": "a b+c d"])),
        .init(query: "flag", expected: .success(["flag": ""])),
        .init(query: "type=copy&type=import", expected: .failure(.validation("The query parameter 'type' is given more than once."))),
        .init(query: "type=copy&type=copy", expected: .failure(.validation("The query parameter 'type' is given more than once."))),
        .init(query: "type=copy&%74ype=import", expected: .failure(.validation("The query parameter 'type' is given more than once."))),
        .init(query: "wait&wait=1", expected: .failure(.validation("The query parameter 'wait' is given more than once."))),
        .init(query: "type=%ZZ", expected: .failure(.validation("The query is not percent-encoded UTF-8."))),
        .init(query: "type=%FF", expected: .failure(.validation("The query is not percent-encoded UTF-8."))),
    ]

    @Test(arguments: cases)
    func theRule(_ c: Case) {
        let read = Result { () throws(APIError) -> [String: String] in try QueryParameters.read(Substring(c.query)) }
        #expect(read == c.expected)
    }

    @Test func unknownNamesAreRefusedWhereTheRouteListsItsOwn() {
        #expect(throws: APIError(.unknownField, "Unknown query parameter 'colour'.")) {
            _ = try QueryParameters.read(Substring("accessLevel=public&colour=red"), known: ["accessLevel"])
        }
    }

    /// Every route, whether it reads a query or not: repeated is 400 `validation_failed`.
    @Test func everyRouteRefusesARepeatedParameter() async throws {
        let rig = try RouteRig { $0.linkSecret = Array("route-tests-link-secret".utf8) }
        let job = try await rig.send("POST", "/v1/jobs", as: "alice", json: ["type": "upload", "accessLevel": "private", "key": "q.bin"])
        let id = try #require(job.json["id"] as? String)
        let upload = try await rig.send("POST", "/v1/uploads", as: "alice", json: ["accessLevel": "private", "key": "u.bin", "size": 10])
        let uploadID = try #require(upload.json["uploadId"] as? String, "\(upload.json)")
        let targets: [(String, String)] = [
            ("GET", "/v1/jobs?type=copy&type=import"),
            ("GET", "/v1/jobs?state=queued&state=running"),
            ("GET", "/v1/jobs?limit=1&limit=2"),
            ("GET", "/v1/jobs?cursor=\(id)&cursor=\(id)"),
            ("GET", "/v1/jobs/\(id)?wait=1&wait=2"),
            ("GET", "/v1/jobs/\(id)/events?expires=1&expires=2&signature=00"),
            ("GET", "/v1/jobs/\(id)/data?expires=1&signature=00&signature=11"),
            ("POST", "/v1/jobs/\(id)/pause?x=1&x=2"),
            ("GET", "/v1/uploads?limit=1&limit=2"),
            ("GET", "/v1/uploads/\(uploadID)?a=1&a=1"),
            ("GET", "/v1/objects?accessLevel=private&accessLevel=public"),
            ("GET", "/v1/objects/properties?accessLevel=private&key=a&key=b"),
            ("DELETE", "/v1/objects?accessLevel=private&key=a&key=b"),
            ("GET", "/healthz?a=1&a=2"),
        ]
        for (method, target) in targets {
            let answer = try await rig.send(method, target, as: "alice")
            #expect(answer.status == 400 && answer.code == "validation_failed", "\(method) \(target): \(answer.status) \(answer.json)")
        }
        let single = try await rig.send("GET", "/v1/jobs?type=upload&state=pending", as: "alice")
        #expect(single.status == 200 && (single.json["jobs"] as? [Any])?.count == 1, "\(single.json)")
        #expect(try await rig.send("GET", "/v1/jobs/\(id)?wait=0", as: "alice").status == 200)
        #expect(try await rig.send("GET", "/v1/uploads?limit=5", as: "alice").status == 200)
    }

    @Test func anAnswerGivenAtOnceFollowsTheRuleToo() throws {
        let rig = try RouteRig()
        var parser = HTTPHeadParser()
        let text = "GET /healthz?a=1&a=2 HTTP/1.1\r\nHost: rig\r\n\r\n"
        guard case .complete(let head, _) = Array(text.utf8).withUnsafeBytes({ parser.parse($0) }) else {
            Issue.record("the test request did not parse")
            return
        }
        let answer = rig.responder.respondAtOnce(to: HTTPRequest(head: head, body: .empty(), remoteAddress: "127.0.0.1:1"))
        #expect(answer?.status == 400)
    }
}

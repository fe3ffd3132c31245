import HTTPServer
import Testing

@testable import Gateway

/// Which draft a request speaks, and how each version writes completeness and limits.
struct InteropVersionTests {
    static func headers(_ fields: [(String, String)]) -> HTTPHeaders { HTTPHeaders(fields.map { (name: $0.0, value: $0.1) }) }

    @Test(arguments: [
        ("3", InteropVersion.Detection.supported(InteropVersion(number: 3))),
        ("6", .supported(InteropVersion(number: 6))), ("7", .supported(InteropVersion(number: 7))),
        ("8", .supported(InteropVersion(number: 8))), (" 6 ", .supported(InteropVersion(number: 6))),
        ("2", .unsupported("2")), ("4", .unsupported("4")), ("5", .unsupported("5")), ("9", .unsupported("9")),
        ("-3", .unsupported("-3")), ("three", .unsupported("three")), ("", .unsupported("")),
    ])
    func detection(field: String, expected: InteropVersion.Detection) {
        #expect(InteropVersion.detect(Self.headers([("Upload-Draft-Interop-Version", field)])) == expected)
    }

    @Test func aRequestWithoutTheFieldIsNoDraftRequest() {
        #expect(InteropVersion.detect(Self.headers([("Upload-Complete", "?1")])) == .absent)
    }

    @Test func aResourceRequestWithoutAVersionIsReadByItsCompletenessField() {
        #expect(InteropVersion.ofResourceRequest(Self.headers([("Upload-Incomplete", "?0")]))?.number == 3)
        #expect(InteropVersion.ofResourceRequest(Self.headers([("Upload-Complete", "?0")]))?.number == 6)
        #expect(InteropVersion.ofResourceRequest(Self.headers([]))?.number == 6)
        #expect(InteropVersion.ofResourceRequest(Self.headers([("Upload-Draft-Interop-Version", "5")])) == nil)
    }

    @Test(arguments: [
        (3, "Upload-Incomplete", "?0", true as Bool?), (3, "Upload-Incomplete", "?1", false), (6, "Upload-Complete", "?1", true),
        (6, "Upload-Complete", "?0", false), (8, "Upload-Complete", "?1", true), (3, "Upload-Complete", "?1", nil),
        (6, "Upload-Incomplete", "?0", nil),
    ])
    func completeness(version: Int, field: String, value: String, completes: Bool?) throws {
        let said = InteropVersion(number: version).completes(Self.headers([(field, value)]))
        #expect(try said.get() == completes)
    }

    @Test func aCompletenessFieldThatIsNoBooleanIsNamed() {
        let said = InteropVersion(number: 6).completes(Self.headers([("Upload-Complete", "yes")]))
        #expect(throws: InteropVersion.InvalidField(name: "Upload-Complete")) { try said.get() }
    }

    @Test func answersSayCompletenessInTheVersionsWords() {
        #expect(InteropVersion(number: 3).completeness(true) == ("Upload-Incomplete", "?0"))
        #expect(InteropVersion(number: 3).completeness(false) == ("Upload-Incomplete", "?1"))
        #expect(InteropVersion(number: 6).completeness(false) == ("Upload-Complete", "?0"))
        #expect(InteropVersion(number: 7).completeness(true) == ("Upload-Complete", "?1"))
    }

    @Test func limitsFromInterop6OnWithTheLifetimeRenamedIn7() {
        #expect(InteropVersion(number: 3).limit(maxSize: 10, lifetime: 5) == nil)
        #expect(InteropVersion(number: 6).limit(maxSize: 10, lifetime: 5)?.1 == "max-size=10, expires=5")
        #expect(InteropVersion(number: 7).limit(maxSize: 10, lifetime: 5)?.1 == "max-size=10, max-age=5")
        #expect(InteropVersion(number: 8).limit(maxSize: 10, lifetime: -1)?.1 == "max-size=10, max-age=0")
    }

    @Test func onlyInterop6OnAsksForPartialUploadBodies() {
        #expect(!InteropVersion(number: 3).requiresPartialUpload)
        #expect(InteropVersion(number: 6).requiresPartialUpload && InteropVersion(number: 8).requiresPartialUpload)
    }
}

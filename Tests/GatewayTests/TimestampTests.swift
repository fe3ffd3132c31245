import Testing

@testable import Gateway

/// One form for every moment the API shows: RFC 3339, UTC, milliseconds.
@Test(arguments: [
    ("2026-12-01T18:30:02Z", "2026-12-01T18:30:02.000Z"),
    ("2026-12-01T18:30:02.000Z", "2026-12-01T18:30:02.000Z"),
    ("2026-12-01T18:30:02.5Z", "2026-12-01T18:30:02.500Z"),
    ("2026-12-01T18:30:02.123456Z", "2026-12-01T18:30:02.123Z"),
    ("2026-12-01T19:30:02+01:00", "2026-12-01T18:30:02.000Z"),
])
func listedMomentsAreShownWithMilliseconds(listed: String, shown: String) {
    #expect(Timestamp.rfc3339(normalizing: listed) == shown)
}

@Test func somethingElseIsNoMoment() {
    #expect(Timestamp.rfc3339(normalizing: "yesterday") == nil)
    #expect(Timestamp.rfc3339(normalizing: "") == nil)
}

@Test func theHTTPDateOfPropertiesHasTheSameForm() {
    #expect(Timestamp.rfc3339(httpDate: "Tue, 01 Dec 2026 18:30:02 GMT") == "2026-12-01T18:30:02.000Z")
}

import Foundation
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

@Test func millisecondsAreSpelledAsFoundationSpellsThem() {
    // Whole seconds and not, leap days, the ends of years and centuries, before 1970.
    let formatter = ISO8601DateFormatter()
    formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
    formatter.timeZone = TimeZone(identifier: "UTC")
    var moments: [Int64] = [0, 1, 999, 1000, -1, -1000, -86_400_001, 951_782_400_000, 951_868_799_999, 1_765_000_000_123]
    for step in 0..<400 { moments.append(Int64(step) * 7_919_999_937 + 123) }  // 1970 to about 2070
    for ms in moments {
        let expected = formatter.string(from: Date(timeIntervalSince1970: Double(ms) / 1000))
        #expect(Timestamp.rfc3339(milliseconds: ms) == expected, "\(ms)")
    }
}

import Testing

@testable import Gateway

/// A feed position as `since=`, `Last-Event-ID` and the JSON `cursor` carry it.
struct FeedCursorTests {
    @Test(arguments: [
        ("0", Int64(0)), ("1", 1), ("42", 42), ("999999999999999999", 999_999_999_999_999_999),
    ])
    func decimalNumbersAreCursors(text: String, sequence: Int64) {
        #expect(FeedCursor(text)?.sequence == sequence)
        #expect(FeedCursor(text)?.text == text)
    }

    @Test(arguments: [
        "", " 1", "1 ", "+1", "-1", "01", "00", "1.0", "1e3", "0x10", "abc", "１", "9999999999999999999",
        "1000000000000000000", "1\n2", "٣",
    ])
    func anythingElseIsNot(text: String) {
        #expect(FeedCursor(text) == nil)
    }

    @Test func aPositionComesFromLastEventIDThenSinceThenNow() throws {
        #expect(try EventFeedRoutes.position(lastEventID: "3", since: "1", latest: 5) == FeedCursor(3))
        #expect(try EventFeedRoutes.position(lastEventID: nil, since: "1", latest: 5) == FeedCursor(1))
        #expect(try EventFeedRoutes.position(lastEventID: nil, since: nil, latest: 5) == FeedCursor(5))
        #expect(try EventFeedRoutes.position(lastEventID: nil, since: "5", latest: 5) == FeedCursor(5))
    }

    /// A number past the identity's newest event was never given to it: refused, not waited for.
    @Test(
        arguments: [("6", nil), (nil, "6"), ("x", nil), (nil, "x"), ("", nil), (nil, "-1"), ("0", ""), ("1", "x"), ("1", "6")]
            as [(String?, String?)])
    func aPositionThisFeedDidNotGiveIsRefused(lastEventID: String?, since: String?) {
        #expect(throws: APIError.self) { try EventFeedRoutes.position(lastEventID: lastEventID, since: since, latest: 5) }
        do {
            _ = try EventFeedRoutes.position(lastEventID: lastEventID, since: since, latest: 5)
        } catch {
            #expect(error.code == .validationFailed)
        }
    }

    @Test(
        arguments: [
            (nil, false), ("text/event-stream", false), ("application/json", true), ("Application/JSON; charset=utf-8", true),
            ("text/event-stream, application/json", false), ("*/*", false),
        ] as [(String?, Bool)])
    func jsonOnlyWhenAskedForAndNotTheStream(accept: String?, json: Bool) {
        #expect(EventFeedRoutes.wantsJSON(accept) == json)
    }
}

/// A position in an identity's event feed: the number of the last event seen (0: before the
/// first). Written as that number in decimal, as the SSE `id:` lines carry it, so a
/// `Last-Event-ID` and a `cursor` are the same value.
struct FeedCursor: Sendable, Equatable, Comparable {
    let sequence: Int64

    init(_ sequence: Int64) {
        self.sequence = sequence
    }

    /// 1 to 18 ASCII digits, no sign, no space, no leading zero (but `0` itself): anything else
    /// is not a cursor this API gave. Eighteen digits keep every value inside `Int64`.
    init?(_ text: Substring) {
        let bytes = text.utf8
        guard (1...18).contains(bytes.count), bytes.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }),
            bytes.count == 1 || bytes.first != 0x30
        else { return nil }
        var value: Int64 = 0
        for byte in bytes { value = value * 10 + Int64(byte - 0x30) }
        sequence = value
    }

    init?(_ text: String) { self.init(Substring(text)) }

    var text: String { String(sequence) }

    static func < (a: FeedCursor, b: FeedCursor) -> Bool { a.sequence < b.sequence }
}

import CivilDate

/// A signing instant in the two spellings SigV4 uses: `yyyyMMdd` and `yyyyMMdd'T'HHmmss'Z'`.
///
/// The sixteen ASCII bytes of the long form are kept in two words, not in a `String` (one
/// that long lives on the heap): a presigned URL writes them twice, straight into its buffers.
public struct SigningTime: Sendable, Equatable {
    public let secondsSince1970: Int
    private let text: (UInt64, UInt64)

    /// `yyyyMMdd`.
    public var date: String { withText { String(decoding: $0.prefix(8), as: UTF8.self) } }
    /// `yyyyMMdd'T'HHmmss'Z'`.
    public var dateTime: String { withText { String(decoding: $0, as: UTF8.self) } }

    public func appendDate(to out: inout [UInt8]) { withText { out.append(contentsOf: $0.prefix(8)) } }
    public func appendDateTime(to out: inout [UInt8]) { withText { out.append(contentsOf: $0) } }

    func withText<R>(_ body: (UnsafeRawBufferPointer) -> R) -> R {
        withUnsafeBytes(of: text, body)
    }

    public static func == (a: SigningTime, b: SigningTime) -> Bool { a.secondsSince1970 == b.secondsSince1970 }

    /// Days since 1970-01-01 (UTC): what `date` spells.
    public var day: Int { CivilDate.split(seconds: secondsSince1970).days }

    /// `2026-11-29T12:30:45Z` (RFC 3339).
    public var iso8601: String { Self.iso8601(secondsSince1970) }

    /// RFC 3339 for a moment given in seconds since 1970.
    public static func iso8601(_ secondsSince1970: Int) -> String {
        String(unsafeUninitializedCapacity: 20) { writeISO8601(secondsSince1970, into: UnsafeMutableRawBufferPointer($0)) }
    }

    /// The same, appended to `out`.
    public static func appendISO8601(_ secondsSince1970: Int, to out: inout [UInt8]) {
        withUnsafeTemporaryAllocation(byteCount: 20, alignment: 1) { buffer in
            let count = writeISO8601(secondsSince1970, into: buffer)
            out.append(contentsOf: UnsafeRawBufferPointer(rebasing: buffer[..<count]))
        }
    }

    private static func writeISO8601(_ secondsSince1970: Int, into buffer: UnsafeMutableRawBufferPointer) -> Int {
        let (year, month, day, secondOfDay) = fields(secondsSince1970)
        put(year, 4, at: 0, in: buffer); buffer[4] = UInt8(ascii: "-"); put(month, 2, at: 5, in: buffer)
        buffer[7] = UInt8(ascii: "-"); put(day, 2, at: 8, in: buffer); buffer[10] = UInt8(ascii: "T")
        put(secondOfDay / 3600, 2, at: 11, in: buffer); buffer[13] = UInt8(ascii: ":")
        put(secondOfDay / 60 % 60, 2, at: 14, in: buffer); buffer[16] = UInt8(ascii: ":")
        put(secondOfDay % 60, 2, at: 17, in: buffer); buffer[19] = UInt8(ascii: "Z")
        return 20
    }

    /// `value` in `width` decimal digits at `offset`.
    private static func put(_ value: Int, _ width: Int, at offset: Int, in buffer: UnsafeMutableRawBufferPointer) {
        var v = value
        for i in stride(from: offset + width - 1, through: offset, by: -1) {
            buffer[i] = UInt8(48 + v % 10)
            v /= 10
        }
    }

    /// Year, month, day and second of the day.
    private static func fields(_ secondsSince1970: Int) -> (Int, Int, Int, Int) {
        let (days, secondOfDay) = CivilDate.split(seconds: secondsSince1970)
        let (year, month, day) = CivilDate.fromDays(days)
        return (year, month, day, secondOfDay)
    }

    public init(secondsSince1970: Int) {
        self.secondsSince1970 = secondsSince1970
        let (year, month, day, secondOfDay) = Self.fields(secondsSince1970)
        var text: (UInt64, UInt64) = (0, 0)
        withUnsafeMutableBytes(of: &text) { buffer in
            Self.put(year, 4, at: 0, in: buffer); Self.put(month, 2, at: 4, in: buffer); Self.put(day, 2, at: 6, in: buffer)
            buffer[8] = UInt8(ascii: "T")
            Self.put(secondOfDay / 3600, 2, at: 9, in: buffer); Self.put(secondOfDay / 60 % 60, 2, at: 11, in: buffer)
            Self.put(secondOfDay % 60, 2, at: 13, in: buffer)
            buffer[15] = UInt8(ascii: "Z")
        }
        self.text = text
    }
}

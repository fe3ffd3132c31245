/// Unicode noncharacters (The Unicode Standard §23.7): U+FDD0–U+FDEF and the last two code
/// points of every plane (U+FFFE, U+FFFF, U+1FFFE, … U+10FFFF), 66 in all. Keys and identity
/// ids must not hold them: S3 lists such a key as U+FFFD (XML 1.0 cannot carry U+FFFE or
/// U+FFFF), so a listing would show keys that do not exist and a cursor that never advances.
public enum UnicodeNoncharacters {
    /// The rule on a code point.
    public static func contains(_ value: UInt32) -> Bool {
        (0xFDD0...0xFDEF).contains(value) || (value & 0xFFFE == 0xFFFE && value <= 0x10FFFF)
    }

    /// Whether valid UTF-8 holds a noncharacter, read from the bytes without decoding:
    /// U+FDD0–U+FDEF are EF B7 90–AF; U+FFFE/U+FFFF are EF BF BE/BF; U+nFFFE/U+nFFFF of planes
    /// 1–16 are a four-byte lead, a second byte whose low four bits are all set, BF, and BE/BF.
    public static func occur(in utf8: UnsafeBufferPointer<UInt8>) -> Bool {
        let count = utf8.count
        var i = 0
        while i < count {
            let lead = utf8[i]
            if lead == 0xEF && i + 2 < count {
                let second = utf8[i + 1], third = utf8[i + 2]
                if second == 0xB7 && third >= 0x90 && third <= 0xAF { return true }
                if second == 0xBF && third >= 0xBE { return true }
                i += 3
            } else if lead >= 0xF0 && i + 3 < count {
                if utf8[i + 1] & 0x0F == 0x0F && utf8[i + 2] == 0xBF && utf8[i + 3] >= 0xBE { return true }
                i += 4
            } else {
                i += 1
            }
        }
        return false
    }

    /// The same, for a string.
    public static func occur(in text: String) -> Bool {
        var text = text
        return text.withUTF8 { occur(in: $0) }
    }
}

/// An ordered list of header fields with case-insensitive lookup (RFC 9110 §5.1).
///
/// Names keep the spelling they arrived with; comparisons ignore ASCII case. Order is kept
/// because it carries meaning for repeated fields.
public struct HTTPHeaders: Sendable, Sequence {
    public private(set) var fields: [(name: String, value: String)]

    public init(_ fields: [(name: String, value: String)] = []) {
        self.fields = fields
    }

    public var count: Int { fields.count }

    public func makeIterator() -> IndexingIterator<[(name: String, value: String)]> {
        fields.makeIterator()
    }

    /// The first value of `name`, or nil.
    public subscript(name: String) -> String? {
        // By index: the names are compared where they are, not copied out with their values.
        for i in fields.indices where fields[i].name.equalsIgnoringASCIICase(name) { return fields[i].value }
        return nil
    }

    /// Every value of `name`, in order.
    public func values(_ name: String) -> [String] {
        fields.filter { $0.name.equalsIgnoringASCIICase(name) }.map(\.value)
    }

    /// Every comma-separated element of every `name` field, trimmed, empty ones dropped
    /// (RFC 9110 §5.6.1 list syntax).
    public func listElements(_ name: String) -> [Substring] {
        Self.listElements(of: values(name))
    }

    /// The comma-separated elements of `values`, trimmed, empty ones dropped.
    static func listElements(of values: [String]) -> [Substring] {
        var out: [Substring] = []
        for value in values {
            for element in value.split(separator: ",", omittingEmptySubsequences: true) {
                let trimmed = element.trimmingOWS()
                if !trimmed.isEmpty { out.append(trimmed) }
            }
        }
        return out
    }

    public func contains(_ name: String) -> Bool { self[name] != nil }

    public mutating func add(_ name: String, _ value: String) {
        fields.append((name, value))
    }

    /// Replaces every `name` field with one holding `value`.
    public mutating func set(_ name: String, _ value: String) {
        remove(name)
        fields.append((name, value))
    }

    public mutating func remove(_ name: String) {
        fields.removeAll { $0.name.equalsIgnoringASCIICase(name) }
    }
}

extension StringProtocol {
    /// ASCII case-insensitive equality, the comparison HTTP uses for names and tokens.
    public func equalsIgnoringASCIICase<Other: StringProtocol>(_ other: Other) -> Bool {
        let a = self.utf8, b = other.utf8
        guard a.count == b.count else { return false }
        let inPlace = a.withContiguousStorageIfAvailable { x in
            b.withContiguousStorageIfAvailable { y in
                for i in 0..<x.count where x[i] != y[i] && asciiLower(x[i]) != asciiLower(y[i]) { return false }
                return true
            }
        }
        if let inPlace, let inPlace { return inPlace }
        for (x, y) in zip(a, b) where x != y {
            if asciiLower(x) != asciiLower(y) { return false }
        }
        return true
    }

    /// Drops optional white space (SP and HTAB) at both ends.
    /// Works on the UTF-8 bytes: stepping by `Character` would pay for grapheme breaking.
    public func trimmingOWS() -> Substring {
        let text = Substring(self)
        let utf8 = text.utf8
        var start = utf8.startIndex, end = utf8.endIndex
        while start < end, utf8[start] == 0x20 || utf8[start] == 0x09 { utf8.formIndex(after: &start) }
        while start < end {
            let before = utf8.index(before: end)
            guard utf8[before] == 0x20 || utf8[before] == 0x09 else { break }
            end = before
        }
        if start == utf8.startIndex && end == utf8.endIndex { return text }
        return Substring(utf8[start..<end])
    }
}

@inline(__always)
func asciiLower(_ byte: UInt8) -> UInt8 {
    (byte >= 0x41 && byte <= 0x5A) ? byte | 0x20 : byte
}

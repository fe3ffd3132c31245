/// The member names a request body may have: a few short names, found by a scan of those of
/// the same length (no hashing, which costs more than the scan for a body's handful of keys).
struct FieldNames: ExpressibleByArrayLiteral, Sendable {
    /// The names by their UTF-8 length.
    private let byLength: [[String]]

    init(_ names: some Sequence<String>) {
        var byLength: [[String]] = []
        for name in Set(names) {
            let length = name.utf8.count
            if byLength.count <= length { byLength += Array(repeating: [], count: length + 1 - byLength.count) }
            byLength[length].append(name)
        }
        self.byLength = byLength
    }

    init(arrayLiteral names: String...) { self.init(names) }

    func contains(_ name: String) -> Bool {
        let length = name.utf8.count
        return length < byLength.count && byLength[length].contains(name)
    }
}

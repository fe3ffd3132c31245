import Foundation

#if canImport(FoundationXML)
    import FoundationXML
#endif

/// A parsed XML document as a plain tree: element names (namespace prefixes dropped), text and
/// children. S3's answers are small and shallow, so this is all the XML the client needs.
struct XMLTree: Sendable {
    var name: String
    var text: String
    var children: [XMLTree]

    struct ParseError: Error {}

    static func parse(_ bytes: [UInt8]) throws -> XMLTree {
        let parser = XMLParser(data: Data(bytes))
        let builder = Builder()
        parser.delegate = builder
        parser.shouldProcessNamespaces = true
        guard parser.parse(), let root = builder.root else { throw ParseError() }
        return root
    }

    /// The first child named `name`.
    func child(_ name: String) -> XMLTree? { children.first { $0.name == name } }

    /// Every child named `name`.
    func all(_ name: String) -> [XMLTree] { children.filter { $0.name == name } }

    /// The text of the first child named `name`.
    func text(_ name: String) -> String? { child(name)?.text }

    private final class Builder: NSObject, XMLParserDelegate {
        var stack: [XMLTree] = []
        var root: XMLTree?

        func parser(
            _ parser: XMLParser, didStartElement elementName: String, namespaceURI: String?,
            qualifiedName qName: String?, attributes attributeDict: [String: String] = [:]
        ) {
            let local = elementName.split(separator: ":").last.map(String.init) ?? elementName
            stack.append(XMLTree(name: local, text: "", children: []))
        }

        func parser(_ parser: XMLParser, foundCharacters string: String) {
            if !stack.isEmpty { stack[stack.count - 1].text += string }
        }

        func parser(
            _ parser: XMLParser, didEndElement elementName: String, namespaceURI: String?,
            qualifiedName qName: String?
        ) {
            guard var done = stack.popLast() else { return }
            if !done.children.isEmpty { done.text = done.text.trimmingCharacters(in: .whitespacesAndNewlines) }
            if stack.isEmpty { root = done } else { stack[stack.count - 1].children.append(done) }
        }
    }
}

/// Escapes text for an XML element body.
func xmlEscape(_ text: String) -> String {
    var out = ""
    out.reserveCapacity(text.count)
    for ch in text {
        switch ch {
        case "&": out += "&amp;"
        case "<": out += "&lt;"
        case ">": out += "&gt;"
        case "\"": out += "&quot;"
        case "'": out += "&apos;"
        default: out.append(ch)
        }
    }
    return out
}

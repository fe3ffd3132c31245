import Foundation
import Gateway
import HTTPServer

/// Typed reads of environment variables, each failing with the variable's name. Empty values
/// count as unset. Secret values are never echoed back in an error.
struct EnvironmentReader {
    let env: [String: String]

    func string(_ name: String, secret: Bool = false) throws(Configuration.Invalid) -> String? {
        guard let value = env[name], !value.isEmpty else { return nil }
        if value.utf8.contains(where: { $0 < 0x20 && $0 != 0x09 }) {
            throw Configuration.Invalid(variable: name, reason: "has a control character")
        }
        return value
    }

    func integer(_ name: String, in range: ClosedRange<Int>) throws(Configuration.Invalid) -> Int? {
        guard let text = try string(name) else { return nil }
        guard let value = Int(text.trimmingCharacters()), range.contains(value) else {
            throw Configuration.Invalid(
                variable: name,
                reason: "must be a whole number from \(range.lowerBound) to \(range.upperBound), got '\(text)'")
        }
        return value
    }

    /// An RFC 3339 moment (`2026-11-30T12:00:00Z`, an offset or fractional seconds allowed),
    /// as whole seconds since 1970.
    func timestamp(_ name: String) throws(Configuration.Invalid) -> Int? {
        guard let text = try string(name) else { return nil }
        guard let date = RFC3339.date(from: text.trimmingCharacters()) else {
            throw Configuration.Invalid(variable: name, reason: "must be an RFC 3339 time like 2026-11-30T12:00:00Z, got '\(text)'")
        }
        return Int(date.timeIntervalSince1970.rounded(.down))
    }

    func bool(_ name: String) throws(Configuration.Invalid) -> Bool? {
        guard let text = try string(name) else { return nil }
        switch text.trimmingCharacters().lowercased() {
        case "true", "1", "yes", "on": return true
        case "false", "0", "no", "off": return false
        default: throw Configuration.Invalid(variable: name, reason: "must be true or false, got '\(text)'")
        }
    }

    func url(_ name: String) throws(Configuration.Invalid) -> String? {
        guard let text = try string(name) else { return nil }
        let lower = text.lowercased()
        guard (lower.hasPrefix("http://") || lower.hasPrefix("https://")) && text.count > 8 && !text.contains(" ") else {
            throw Configuration.Invalid(variable: name, reason: "must be an http:// or https:// URL, got '\(text)'")
        }
        return text
    }

    func logLevel(_ name: String) throws(Configuration.Invalid) -> Configuration.LogLevel? {
        guard let text = try string(name) else { return nil }
        switch text.lowercased() {
        case "debug": return .debug
        case "info": return .info
        case "warn", "warning": return .warn
        case "error": return .error
        default: throw Configuration.Invalid(variable: name, reason: "must be debug, info, warn or error, got '\(text)'")
        }
    }

    /// `host[:port]` items, comma separated.
    func hostList(_ name: String) throws(Configuration.Invalid) -> [String] {
        guard let text = try string(name) else { return [] }
        var hosts: [String] = []
        for item in text.split(separator: ",") {
            let host = String(item).trimmingCharacters().lowercased()
            if host.isEmpty { continue }
            let valid = host.allSatisfy { $0.isLetter || $0.isNumber || ".-:[]_".contains($0) }
            guard valid else { throw Configuration.Invalid(variable: name, reason: "'\(host)' is not host[:port]") }
            hosts.append(host)
        }
        return hosts
    }

    /// Addresses or CIDR blocks (`10.0.0.0/8`, `::1`, `fd00::/8`), comma separated.
    func cidrList(_ name: String) throws(Configuration.Invalid) -> [String] {
        guard let text = try string(name) else { return [] }
        var blocks: [String] = []
        for item in text.split(separator: ",") {
            let block = String(item).trimmingCharacters()
            if block.isEmpty { continue }
            guard AddressBlock(block) != nil else {
                throw Configuration.Invalid(variable: name, reason: "'\(block)' is not an IP address or CIDR block like 10.0.0.0/8")
            }
            blocks.append(block)
        }
        return blocks
    }

    /// `*` or `scheme://host[:port]` items, comma separated.
    func originList(_ name: String) throws(Configuration.Invalid) -> [String] {
        guard let text = try string(name) else { return [] }
        return try Self.origins(text.split(separator: ",").map(String.init), name: name)
    }

    /// Browser origins (`https://app.example.com`, or `*`), lowercased; blank items are skipped
    /// and anything else is refused naming `name` (a variable, or a command-line flag).
    static func origins(_ items: [String], name: String) throws(Configuration.Invalid) -> [String] {
        var origins: [String] = []
        for item in items {
            let origin = item.trimmingCharacters()
            if origin.isEmpty { continue }
            if origin == "*" { origins.append(origin); continue }
            let lower = origin.lowercased()
            guard lower.hasPrefix("http://") || lower.hasPrefix("https://"),
                !origin.dropFirst(8).contains("/"), !origin.contains(" ")
            else {
                throw Configuration.Invalid(variable: name, reason: "'\(origin)' is not an origin like https://app.example.com")
            }
            origins.append(lower)
        }
        return origins
    }
}

extension String {
    func trimmingCharacters() -> String {
        var s = Substring(self)
        while let f = s.first, f == " " || f == "\t" { s.removeFirst() }
        while let l = s.last, l == " " || l == "\t" { s.removeLast() }
        return String(s)
    }
}

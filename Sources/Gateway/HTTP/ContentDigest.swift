import Foundation
import TransferEngine

/// `Content-Digest` (RFC 9530 §2) of a request: a Structured Field Dictionary (RFC 8941 §3.2)
/// of hash algorithm keys to Byte Sequences, e.g. `sha-256=:X48E9q…=:, crc32c=:4waSgw==:`.
/// Keys the gateway does not verify (`sha-512`, the deprecated ones, unknown ones) are ignored,
/// as RFC 9530 §5 lets a recipient do; of those it verifies, `sha-256` is preferred.
enum ContentDigest {
    /// The field is not a Dictionary, or a verified algorithm's value is not a Byte Sequence
    /// of its digest's length.
    struct Invalid: Error, Equatable {
        let reason: String
    }

    /// The one digest to verify, or nil when the field names none the gateway verifies.
    static func parse(_ field: String) throws -> ObjectChecksum? {
        let members = try dictionary(Array(field.utf8))
        var found: [ObjectChecksum.Algorithm: ObjectChecksum] = [:]
        for (key, value) in members {
            guard let algorithm = ObjectChecksum.Algorithm.allCases.first(where: { $0.digestFieldKey == key }) else { continue }
            guard case .bytes(let digest) = value, let checksum = ObjectChecksum(algorithm: algorithm, digest: digest) else {
                throw Invalid(reason: "\(key) must be a byte sequence of \(algorithm.byteCount) bytes (:base64:)")
            }
            found[algorithm] = checksum
        }
        return found[.sha256] ?? found[.crc32c]
    }

    /// A member's value, as far as a digest needs to know it.
    enum Value: Equatable {
        case bytes([UInt8])
        /// Any other bare item (integer, string, token, boolean…), whose content is not used.
        case other
    }

    /// RFC 8941 §4.2.2 over the field's bytes: members separated by commas and optional
    /// whitespace; each a key, optionally `=` and a bare item, then parameters (skipped). A
    /// later member with the same key replaces an earlier one. Inner lists are refused.
    static func dictionary(_ bytes: [UInt8]) throws -> [(String, Value)] {
        var members: [(String, Value)] = []
        var i = 0
        func skip(_ set: Set<UInt8>) { while i < bytes.count, set.contains(bytes[i]) { i += 1 } }
        let ows: Set<UInt8> = [0x20, 0x09], sp: Set<UInt8> = [0x20]
        skip(sp)
        guard i < bytes.count else { throw Invalid(reason: "the field is empty") }
        while i < bytes.count {
            let key = try self.key(bytes, &i)
            var value = Value.other
            if i < bytes.count, bytes[i] == UInt8(ascii: "=") {
                i += 1
                value = try bareItem(bytes, &i)
            }
            try parameters(bytes, &i)
            members.removeAll { $0.0 == key }
            members.append((key, value))
            skip(ows)
            guard i < bytes.count else { break }
            guard bytes[i] == UInt8(ascii: ",") else { throw Invalid(reason: "members must be separated by commas") }
            i += 1
            skip(ows)
            guard i < bytes.count else { throw Invalid(reason: "a comma ends the field") }
        }
        return members
    }

    /// `key = ( lcalpha / "*" ) *( lcalpha / DIGIT / "_" / "-" / "." / "*" )`.
    private static func key(_ bytes: [UInt8], _ i: inout Int) throws -> String {
        let start = i
        guard i < bytes.count, (0x61...0x7A).contains(bytes[i]) || bytes[i] == UInt8(ascii: "*") else {
            throw Invalid(reason: "a key must begin with a lower-case letter or *")
        }
        i += 1
        while i < bytes.count,
            (0x61...0x7A).contains(bytes[i]) || (0x30...0x39).contains(bytes[i]) || "_-.*".utf8.contains(bytes[i])
        {
            i += 1
        }
        return String(decoding: bytes[start..<i], as: UTF8.self)
    }

    /// A bare item: a Byte Sequence is decoded; a string, token, number or boolean is checked
    /// for its shape only.
    private static func bareItem(_ bytes: [UInt8], _ i: inout Int) throws -> Value {
        guard i < bytes.count else { throw Invalid(reason: "a value is missing") }
        let first = bytes[i]
        switch first {
        case UInt8(ascii: ":"):
            let start = i + 1
            guard let end = bytes[start...].firstIndex(of: UInt8(ascii: ":")) else {
                throw Invalid(reason: "a byte sequence is not closed")
            }
            let text = bytes[start..<end]
            guard text.allSatisfy({ base64.contains($0) }), let data = Data(base64Encoded: Data(text)) else {
                throw Invalid(reason: "a byte sequence is not base64")
            }
            i = end + 1
            return .bytes(Array(data))
        case UInt8(ascii: "\""):
            i += 1
            while i < bytes.count {
                let byte = bytes[i]
                if byte == UInt8(ascii: "\\") {
                    guard i + 1 < bytes.count, bytes[i + 1] == UInt8(ascii: "\\") || bytes[i + 1] == UInt8(ascii: "\"") else {
                        throw Invalid(reason: "a string has a bad escape")
                    }
                    i += 2
                    continue
                }
                guard (0x20...0x7E).contains(byte) else { throw Invalid(reason: "a string has a control character") }
                i += 1
                if byte == UInt8(ascii: "\"") { return .other }
            }
            throw Invalid(reason: "a string is not closed")
        case UInt8(ascii: "?"):
            guard i + 1 < bytes.count, bytes[i + 1] == UInt8(ascii: "0") || bytes[i + 1] == UInt8(ascii: "1") else {
                throw Invalid(reason: "a boolean must be ?0 or ?1")
            }
            i += 2
            return .other
        case UInt8(ascii: "-"), 0x30...0x39:
            i += 1
            while i < bytes.count, (0x30...0x39).contains(bytes[i]) || bytes[i] == UInt8(ascii: ".") { i += 1 }
            return .other
        case 0x41...0x5A, 0x61...0x7A, UInt8(ascii: "*"):
            i += 1
            while i < bytes.count, tokenCharacters.contains(bytes[i]) { i += 1 }
            return .other
        default:
            throw Invalid(reason: "a value is not an item (inner lists are not digests)")
        }
    }

    /// `*( ";" *SP key [ "=" bare-item ] )`, checked and skipped.
    private static func parameters(_ bytes: [UInt8], _ i: inout Int) throws {
        while i < bytes.count, bytes[i] == UInt8(ascii: ";") {
            i += 1
            while i < bytes.count, bytes[i] == 0x20 { i += 1 }
            _ = try key(bytes, &i)
            if i < bytes.count, bytes[i] == UInt8(ascii: "=") {
                i += 1
                _ = try bareItem(bytes, &i)
            }
        }
    }

    private static let base64 = Set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=".utf8)
    /// RFC 9110 tchar, plus ":" and "/" as RFC 8941 tokens allow.
    private static let tokenCharacters = Set("!#$%&'*+-.^_`|~:/ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789".utf8)
}

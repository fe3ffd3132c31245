import Auth
import Foundation

/// Typed reads of an object's fields, with errors that name the field (never echo its value).
/// An optional field is left out, never `null`: a `null` is the wrong type, as openapi.yaml says.
struct JSONFields {
    let members: JSONObject

    init(_ value: JSONValue) throws(APIError) {
        guard case .object(let members) = value else { throw APIError.invalidJSON("The body must be a JSON object.") }
        self.members = members
    }

    /// Strict bodies: a member whose name is not in `known` is 400 `unknown_field` (nothing is
    /// accepted and then ignored).
    func only(_ known: FieldNames, in context: String = "") throws(APIError) {
        if let key = members.firstKey(where: { !known.contains($0) }) {
            let shown = key.unicodeScalars.count <= 64 ? key : String(key.unicodeScalars.prefix(64)) + "…"
            throw APIError(.unknownField, "Unknown field '\(context)\(shown)'.")
        }
    }

    /// The body's canonical bytes (`JSONValue.canonical`).
    var canonical: [UInt8] {
        var out: [UInt8] = []
        JSONValue.object(members).canonical(into: &out)
        return out
    }

    /// Whether the body has `name` at all.
    func has(_ name: String) -> Bool { members[name] != nil }

    func string(_ name: String) throws(APIError) -> String? {
        switch members[name] {
        case nil: return nil
        case .string(let text)?: return text
        default: throw APIError.invalidJSON("Field '\(name)' has the wrong type.")
        }
    }

    func bool(_ name: String) throws(APIError) -> Bool? {
        switch members[name] {
        case nil: return nil
        case .bool(let value)?: return value
        default: throw APIError.invalidJSON("Field '\(name)' has the wrong type.")
        }
    }

    func requiredString(_ name: String) throws(APIError) -> String {
        guard let text = try string(name) else { throw APIError.invalidJSON("Missing field '\(name)'.") }
        return text
    }

    func integer(_ name: String) throws(APIError) -> Int64? {
        switch members[name] {
        case nil: return nil
        case .number(let number)?:
            // Whole and exact: up to 2^53 − 1, JavaScript's Number.MAX_SAFE_INTEGER.
            guard number == number.rounded(), abs(number) <= 9_007_199_254_740_991 else {
                throw APIError.invalidJSON("Field '\(name)' must be a whole number.")
            }
            return Int64(number)
        default: throw APIError.invalidJSON("Field '\(name)' has the wrong type.")
        }
    }

    func accessLevel(_ name: String) throws(APIError) -> AccessLevel {
        guard let level = AccessLevel(rawValue: try requiredString(name)) else {
            throw APIError.invalidJSON("Field '\(name)' must be public, protected or private.")
        }
        return level
    }

    /// An array member, or nil when absent.
    func array(_ name: String) throws(APIError) -> [JSONValue]? {
        switch members[name] {
        case nil: return nil
        case .array(let elements)?: return elements
        default: throw APIError.validation("\(name) must be an array.")
        }
    }

    /// A nested object's fields.
    func object(_ name: String) throws(APIError) -> JSONFields {
        guard case .object? = members[name], let value = members[name] else { throw APIError.invalidJSON("Missing object '\(name)'.") }
        return try JSONFields(value)
    }

    func stringMap(_ name: String) throws(APIError) -> [String: String]? {
        switch members[name] {
        case nil: return nil
        case .object(let object)?:
            var out: [String: String] = [:]
            for (key, value) in object.pairs {
                guard case .string(let text) = value else { throw APIError.invalidJSON("Field '\(name).\(key)' must be a string.") }
                out[key] = text
            }
            return out
        default: throw APIError.invalidJSON("Field '\(name)' has the wrong type.")
        }
    }
}

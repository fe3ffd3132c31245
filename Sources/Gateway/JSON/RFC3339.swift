import Foundation

/// RFC 3339 moments as S3 (`Initiated`) and settings (`AWS_CREDENTIAL_EXPIRATION`) spell them:
/// `2026-11-30T12:00:00Z`, an offset or fractional seconds allowed. The one parser for both.
public enum RFC3339 {
    public static func date(from text: String) -> Date? {
        let plain = ISO8601DateFormatter()
        if let date = plain.date(from: text) { return date }
        let fractional = ISO8601DateFormatter()
        fractional.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return fractional.date(from: text)
    }
}

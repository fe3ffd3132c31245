import Foundation
import Testing

@testable import TransferGateway

/// The JSON is what `aws s3api put-bucket-cors --cors-configuration` takes: one `CORSRules`
/// list whose members carry S3's names (scripts/bucket-cors-check.sh puts it through the CLI).
@Test func jsonIsTheCORSConfigurationOfTheAWSCLI() throws {
    let rule = BucketCORSRule(origins: ["https://app.example.com", "http://localhost:5173"])
    let parsed = try #require(try JSONSerialization.jsonObject(with: Data(rule.json.utf8)) as? [String: Any])
    #expect(Array(parsed.keys) == ["CORSRules"])
    let rules = try #require(parsed["CORSRules"] as? [[String: Any]])
    #expect(rules.count == 1)
    #expect(rules[0]["AllowedOrigins"] as? [String] == ["https://app.example.com", "http://localhost:5173"])
    #expect(rules[0]["AllowedMethods"] as? [String] == ["GET", "HEAD", "PUT", "POST", "DELETE"])
    #expect(rules[0]["AllowedHeaders"] as? [String] == ["*"])
    #expect((rules[0]["ExposeHeaders"] as? [String])?.contains("ETag") == true)
    #expect(rules[0]["MaxAgeSeconds"] as? Int == 3000)
    #expect(!rule.json.contains("\\/"))
}

@Test func xmlIsS3sDocumentWithTheSameRule() {
    let xml = BucketCORSRule(origins: ["https://a.example"]).xml
    #expect(xml.hasPrefix(#"<CORSConfiguration xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><CORSRule>"#))
    #expect(xml.contains("<AllowedOrigin>https://a.example</AllowedOrigin>"))
    #expect(xml.contains("<ExposeHeader>ETag</ExposeHeader>") && xml.contains("<MaxAgeSeconds>3000</MaxAgeSeconds>"))
    #expect(BucketCORSRule(origins: ["https://a&b"]).xml.contains("https://a&amp;b"))
}

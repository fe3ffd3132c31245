import Testing

@testable import TransferGateway

@Test(arguments: [
    ([], BucketCORSCommand.Options()),
    (["--format", "json"], BucketCORSCommand.Options(format: .json)),
    (["--format", "xml", "--apply"], BucketCORSCommand.Options(format: .xml, apply: true)),
    (
        ["--origin", "https://a.example", "--origin", "http://b.example:8080"],
        BucketCORSCommand.Options(origins: ["https://a.example", "http://b.example:8080"])
    ),
    (["--help"], BucketCORSCommand.Options(help: true)),
])
func bucketCORSOptions(arguments: [String], expected: BucketCORSCommand.Options) throws {
    #expect(try BucketCORSCommand.parse(arguments).get() == expected)
}

@Test(arguments: [["--format"], ["--format", "yaml"], ["--origin"], ["--json"], ["apply"]])
func bucketCORSUsageErrors(arguments: [String]) {
    guard case .failure = BucketCORSCommand.parse(arguments) else {
        Issue.record("\(arguments) was accepted")
        return
    }
}

@Test func originFlagsAreCheckedLikeTheSetting() throws {
    #expect(try EnvironmentReader.origins(["https://App.Example.com", " ", "*"], name: "--origin") == ["https://app.example.com", "*"])
    #expect(throws: Configuration.Invalid.self) { try EnvironmentReader.origins(["app.example.com"], name: "--origin") }
}

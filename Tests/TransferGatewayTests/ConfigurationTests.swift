import Testing

@testable import Gateway
@testable import TransferGateway

@Test func defaultsAreTheDocumentedOnes() throws {
    let c = try Configuration.fromEnvironment([:])
    #expect(c.host == "127.0.0.1" && c.port == 8080)
    #expect(c.s3Region == "us-east-1")
    #expect(c.presignExpiry == 3000 && c.presignMaxExpiry == 604_800)
    #expect(c.partSize == 5_242_880 && c.partConcurrency == 5 && c.maxPartConcurrency == 32)
    #expect(
        c.retryLimit == 3 && c.jobTimeout == nil && c.stallTimeout == 300 && c.retryWindow == 86_400 && c.workers == 8
            && c.leaseSeconds == 30)
    #expect(c.maxObjectSize == 5_497_558_138_880 && c.uploadTTL == 86_400)
    #expect(c.spoolDirectory == "./.spool" && c.downloadTTL == 3600)
    #expect(c.logLevel == .info && !c.allowGuestRead && !c.s3Accelerate)
    #expect(c.userMaxStreams == 8 && c.userMemorySharePercent == 25 && c.userSpoolSharePercent == 25)
    #expect(c.userMemoryShare == 64 << 20 && c.userSpoolShare == 2_684_354_560)
}

/// A share is a percent of its budget, never below what one transfer needs (a read-ahead
/// block and a part's buffers; one smallest part), nor above the budget.
@Test func sharesHaveFloorsAndCeilings() throws {
    let small = try Configuration.fromEnvironment([
        "GATEWAY_MEMORY_BUDGET": "\(16 << 20)", "GATEWAY_USER_MEMORY_SHARE": "1",
        "GATEWAY_SPOOL_BUDGET": "\(16 << 20)", "GATEWAY_USER_SPOOL_SHARE": "10",
    ])
    #expect(small.userMemoryShare == 8 << 20 && small.userSpoolShare == 5 << 20)
    let whole = try Configuration.fromEnvironment(["GATEWAY_USER_MEMORY_SHARE": "100", "GATEWAY_USER_SPOOL_SHARE": "100"])
    #expect(whole.userMemoryShare == 256 << 20 && whole.userSpoolShare == 10 << 30)
    let huge = try Configuration.fromEnvironment(["GATEWAY_SPOOL_BUDGET": "\(1 << 60)"])
    #expect(huge.userSpoolShare == 1 << 58, "a quarter of 2^60, no overflow")
}

@Test func awsVariablesAreTheFallback() throws {
    let c = try Configuration.fromEnvironment([
        "AWS_ACCESS_KEY_ID": "aws-key", "AWS_SECRET_ACCESS_KEY": "aws-secret", "AWS_SESSION_TOKEN": "tok",
        "GATEWAY_S3_ACCESS_KEY_ID": "gw-key",
    ])
    #expect(c.s3AccessKeyID == "gw-key")
    #expect(c.s3SecretAccessKey == "aws-secret")
    #expect(c.s3SessionToken == "tok")
    #expect(c.s3CredentialExpiration == nil)
}

@Test func temporaryCredentialsCarryTheirExpiry() throws {
    let aws = try Configuration.fromEnvironment(["AWS_CREDENTIAL_EXPIRATION": "2026-11-30T12:00:00Z"])
    #expect(aws.s3CredentialExpiration == 1_796_040_000)
    #expect(aws.s3Credentials.expiration == 1_796_040_000)
    let offset = try Configuration.fromEnvironment(["AWS_CREDENTIAL_EXPIRATION": "2026-11-30T13:00:00.250+01:00"])
    #expect(offset.s3CredentialExpiration == 1_796_040_000)
    let own = try Configuration.fromEnvironment([
        "AWS_CREDENTIAL_EXPIRATION": "2026-11-30T12:00:00Z",
        "GATEWAY_S3_CREDENTIAL_EXPIRATION": "2026-11-30T12:00:10Z",
    ])
    #expect(own.s3CredentialExpiration == 1_796_040_010)
}

struct BadSetting: Sendable, CustomTestStringConvertible {
    let variable: String
    let value: String
    var testDescription: String { "\(variable)=\(value)" }
}

@Test(arguments: [
    BadSetting(variable: "GATEWAY_PORT", value: "http"),
    BadSetting(variable: "GATEWAY_PORT", value: "70000"),
    BadSetting(variable: "GATEWAY_PART_SIZE", value: "5242879"),
    BadSetting(variable: "GATEWAY_PART_SIZE", value: "5368709121"),
    BadSetting(variable: "GATEWAY_PART_CONCURRENCY", value: "0"),
    BadSetting(variable: "GATEWAY_PART_CONCURRENCY", value: "33"),
    BadSetting(variable: "GATEWAY_PRESIGN_EXPIRY", value: "604801"),
    BadSetting(variable: "GATEWAY_PRESIGN_MAX_EXPIRY", value: "604801"),
    BadSetting(variable: "GATEWAY_RETRY_LIMIT", value: "-1"),
    BadSetting(variable: "GATEWAY_S3_PATH_STYLE", value: "maybe"),
    BadSetting(variable: "GATEWAY_S3_ENDPOINT", value: "127.0.0.1:8333"),
    BadSetting(variable: "GATEWAY_LOG_LEVEL", value: "loud"),
    BadSetting(variable: "GATEWAY_CORS_ORIGINS", value: "app.example.com"),
    BadSetting(variable: "GATEWAY_IMPORT_ALLOW_HOSTS", value: "a b"),
    BadSetting(variable: "GATEWAY_MAX_OBJECT_SIZE", value: "5497558138881"),
    BadSetting(variable: "GATEWAY_WORKERS", value: "0"),
    BadSetting(variable: "GATEWAY_USER_MAX_STREAMS", value: "0"),
    BadSetting(variable: "GATEWAY_USER_MEMORY_SHARE", value: "0"),
    BadSetting(variable: "GATEWAY_USER_MEMORY_SHARE", value: "101"),
    BadSetting(variable: "GATEWAY_USER_SPOOL_SHARE", value: "25%"),
    BadSetting(variable: "GATEWAY_S3_CREDENTIAL_EXPIRATION", value: "tomorrow"),
    BadSetting(variable: "AWS_CREDENTIAL_EXPIRATION", value: "1796040000"),
])
func malformedSettingNamesItsVariable(_ bad: BadSetting) {
    do {
        _ = try Configuration.fromEnvironment([bad.variable: bad.value])
        Issue.record("\(bad.variable)=\(bad.value) was accepted")
    } catch {
        #expect(error.variable == bad.variable)
        #expect(!error.description.contains("\n"))
    }
}

@Test func secretsAreNeverEchoedInErrors() {
    do {
        _ = try Configuration.fromEnvironment(["GATEWAY_JWT_SECRET": "top\u{1}secret"])
        Issue.record("accepted a control character")
    } catch {
        #expect(error.variable == "GATEWAY_JWT_SECRET")
        #expect(!error.description.contains("secret\u{1}") && !error.description.contains("top"))
    }
}

@Test func serveNeedsDatabaseBucketAndCredentials() throws {
    let missing = try Configuration.fromEnvironment([:])
    #expect(throws: Configuration.Invalid.self) { try missing.checkServeRequirements() }
    let complete = try Configuration.fromEnvironment([
        "GATEWAY_DATABASE_URL": "postgres://x@127.0.0.1/db", "GATEWAY_S3_BUCKET": "b",
        "AWS_ACCESS_KEY_ID": "k", "AWS_SECRET_ACCESS_KEY": "s",
    ])
    #expect(throws: Configuration.Invalid.self) { try complete.checkServeRequirements() }
    var withSecret = complete
    withSecret.jwtSecret = String(repeating: "s", count: 32)
    try withSecret.checkServeRequirements()
}

@Test func corsOriginsAndLists() throws {
    let c = try Configuration.fromEnvironment([
        "GATEWAY_CORS_ORIGINS": "https://App.example.com, http://localhost:3000",
        "GATEWAY_IMPORT_ALLOW_HOSTS": "files.internal:8080, Example.org",
    ])
    #expect(c.corsOrigins == ["https://app.example.com", "http://localhost:3000"])
    #expect(c.importAllowHosts == ["files.internal:8080", "example.org"])
}

/// A webhook receiver needs a URL delivery can use and a signing key; neither is echoed.
@Test func aWebhookNeedsAUsableURLAndASecret() throws {
    let secret = "receiver-secret-0123456789"
    let good = try Configuration.fromEnvironment([
        "GATEWAY_WEBHOOK_URL": "https://hooks.example.com/transfer?k=1",
        "GATEWAY_WEBHOOK_SECRET": secret,
    ])
    #expect(good.webhookURL == "https://hooks.example.com/transfer?k=1" && good.webhookSecret == secret)
    let cases: [([String: String], String)] = [
        (["GATEWAY_WEBHOOK_URL": "https://hooks.example.com/x"], "GATEWAY_WEBHOOK_SECRET"),
        (["GATEWAY_WEBHOOK_URL": "https://hooks.example.com/x", "GATEWAY_WEBHOOK_SECRET": "short"], "GATEWAY_WEBHOOK_SECRET"),
        (["GATEWAY_WEBHOOK_URL": "ftp://hooks.example.com/x", "GATEWAY_WEBHOOK_SECRET": secret], "GATEWAY_WEBHOOK_URL"),
        (["GATEWAY_WEBHOOK_URL": "https://user:pw@hooks.example.com/x", "GATEWAY_WEBHOOK_SECRET": secret], "GATEWAY_WEBHOOK_URL"),
        (["GATEWAY_WEBHOOK_URL": "hooks.example.com", "GATEWAY_WEBHOOK_SECRET": secret], "GATEWAY_WEBHOOK_URL"),
    ]
    for (environment, variable) in cases {
        #expect(throws: Configuration.Invalid.self) { try Configuration.fromEnvironment(environment) }
        do {
            _ = try Configuration.fromEnvironment(environment)
        } catch {
            #expect(error.variable == variable)
            #expect(!error.description.contains("pw@") && !error.description.contains(secret))
        }
    }
}

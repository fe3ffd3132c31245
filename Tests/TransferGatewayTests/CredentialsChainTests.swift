import S3
import SigV4
import Testing

@testable import TransferGateway

/// The S3 credentials chain's choice from the environment, in the AWS SDKs' order.
struct CredentialsChainTests {
    static let webIdentity = ["AWS_WEB_IDENTITY_TOKEN_FILE": "/var/run/secrets/token", "AWS_ROLE_ARN": "arn:aws:iam::1:role/gw"]
    static let container = [
        "AWS_CONTAINER_CREDENTIALS_FULL_URI": "http://169.254.170.23/v1/credentials",
        "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE": "/var/run/secrets/pod-identity/token",
    ]

    func source(_ env: [String: String]) throws -> CredentialsSource? {
        try Configuration.fromEnvironment(env).s3CredentialsSource
    }

    @Test func staticKeysComeFirst() throws {
        let env = Self.webIdentity.merging(Self.container) { a, _ in a }.merging(["AWS_ACCESS_KEY_ID": "K", "AWS_SECRET_ACCESS_KEY": "S"]) {
            a, _ in a
        }
        #expect(try source(env) == .fixed(Credentials(accessKeyID: "K", secretAccessKey: "S")))
        let gateway = try source(["GATEWAY_S3_ACCESS_KEY_ID": "G", "GATEWAY_S3_SECRET_ACCESS_KEY": "GS", "AWS_ACCESS_KEY_ID": "K"])
        #expect(gateway == .fixed(Credentials(accessKeyID: "G", secretAccessKey: "GS")))
    }

    @Test func aWebIdentityTokenGoesToTheRegionalSTS() throws {
        let env = Self.webIdentity.merging(Self.container) { a, _ in a }.merging(["GATEWAY_S3_REGION": "eu-west-3"]) { a, _ in a }
        #expect(
            try source(env)
                == .webIdentity(
                    CredentialsSource.WebIdentity(
                        tokenFile: "/var/run/secrets/token", roleARN: "arn:aws:iam::1:role/gw", sessionName: "transfer-gateway",
                        endpoint: "https://sts.eu-west-3.amazonaws.com")))
        let named = Self.webIdentity.merging(["AWS_ROLE_SESSION_NAME": "gw-1", "AWS_ENDPOINT_URL_STS": "http://127.0.0.1:9999"]) { a, _ in a
        }
        guard case .webIdentity(let settings) = try source(named) else { Issue.record("not web identity"); return }
        #expect(settings.sessionName == "gw-1" && settings.endpoint == "http://127.0.0.1:9999")
    }

    @Test func theContainerEndpointComesNextRelativeBeforeFull() throws {
        #expect(
            try source(Self.container)
                == .container(
                    CredentialsSource.Container(
                        url: "http://169.254.170.23/v1/credentials", authorizationTokenFile: "/var/run/secrets/pod-identity/token")))
        let relative = Self.container.merging(
            ["AWS_CONTAINER_CREDENTIALS_RELATIVE_URI": "/v2/credentials/abc", "AWS_CONTAINER_AUTHORIZATION_TOKEN": "tok"]) { a, _ in a }
        guard case .container(let settings) = try source(relative) else { Issue.record("not container"); return }
        #expect(settings.url == "http://169.254.170.2/v2/credentials/abc" && settings.authorizationToken == "tok")
    }

    @Test func instanceMetadataOnlyWhenNothingElseIsConfigured() throws {
        #expect(try source([:]) == .instanceMetadata(endpoint: "http://169.254.169.254"))
        #expect(
            try source(["AWS_EC2_METADATA_SERVICE_ENDPOINT": "http://127.0.0.1:1338"])
                == .instanceMetadata(endpoint: "http://127.0.0.1:1338"))
        #expect(try source(["AWS_EC2_METADATA_DISABLED": "true"]) == nil)
    }

    @Test func serveWithoutAnyCredentialsStopsAsBefore() throws {
        let base = [
            "GATEWAY_DATABASE_URL": "postgres://x@127.0.0.1/db", "GATEWAY_S3_BUCKET": "b",
            "GATEWAY_JWT_SECRET": String(repeating: "s", count: 32),
        ]
        let disabled = try Configuration.fromEnvironment(base.merging(["AWS_EC2_METADATA_DISABLED": "true"]) { a, _ in a })
        do {
            try disabled.checkServeRequirements()
            Issue.record("served without credentials")
        } catch {
            #expect(error.description == "GATEWAY_S3_ACCESS_KEY_ID: is required (or AWS_ACCESS_KEY_ID)")
        }
        let halfAPair = try Configuration.fromEnvironment(base.merging(["AWS_SECRET_ACCESS_KEY": "s"]) { a, _ in a })
        #expect(throws: Configuration.Invalid.self) { try halfAPair.checkServeRequirements() }
        // IMDS may still answer (serve asks it once before listening), as may STS.
        try Configuration.fromEnvironment(base).checkServeRequirements()
        try Configuration.fromEnvironment(base.merging(Self.webIdentity) { a, _ in a }).checkServeRequirements()
    }

    @Test(arguments: [
        (["AWS_WEB_IDENTITY_TOKEN_FILE": "/t"], "AWS_ROLE_ARN"),
        (["AWS_ROLE_SESSION_NAME": "has space"], "AWS_ROLE_SESSION_NAME"),
        (["AWS_ENDPOINT_URL_STS": "sts.example.com"], "AWS_ENDPOINT_URL_STS"),
        (["AWS_CONTAINER_CREDENTIALS_FULL_URI": "http://creds.example.com/x"], "AWS_CONTAINER_CREDENTIALS_FULL_URI"),
        (["AWS_CONTAINER_CREDENTIALS_RELATIVE_URI": "v2/creds"], "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI"),
        (["AWS_EC2_METADATA_SERVICE_ENDPOINT": "169.254.169.254"], "AWS_EC2_METADATA_SERVICE_ENDPOINT"),
        (["AWS_EC2_METADATA_DISABLED": "maybe"], "AWS_EC2_METADATA_DISABLED"),
    ])
    func malformedChainSettingsNameTheirVariable(env: [String: String], variable: String) {
        #expect(throws: Configuration.Invalid.self) { try Configuration.fromEnvironment(env) }
        do {
            _ = try Configuration.fromEnvironment(env)
        } catch {
            #expect(error.variable == variable)
        }
    }

    @Test func theContainerTokenIsNeverEchoed() {
        do {
            _ = try Configuration.fromEnvironment(["AWS_CONTAINER_AUTHORIZATION_TOKEN": "Bearer very\u{1}secret"])
            Issue.record("accepted a control character")
        } catch {
            #expect(error.variable == "AWS_CONTAINER_AUTHORIZATION_TOKEN" && !error.description.contains("secret"))
        }
    }
}

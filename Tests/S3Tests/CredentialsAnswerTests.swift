import Testing

@testable import S3
@testable import SigV4

/// The credential providers' answers, as AWS documents them (STS API Reference,
/// AssumeRoleWithWebIdentity; the ECS task role and IMDS credential documents).
struct CredentialsAnswerTests {
    static let secret = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzEXAMPLEKEY"

    static let stsAnswer = """
        <AssumeRoleWithWebIdentityResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/">
          <AssumeRoleWithWebIdentityResult>
            <SubjectFromWebIdentityToken>amzn1.account.AF6RHO7KZU5XRVQJGXK6HB56KR2A</SubjectFromWebIdentityToken>
            <Audience>client.5498841531868486423.1548@apps.example.com</Audience>
            <AssumedRoleUser>
              <Arn>arn:aws:sts::123456789012:assumed-role/FederatedWebIdentityRole/app1</Arn>
              <AssumedRoleId>AROACLKWSDQRAOEXAMPLE:app1</AssumedRoleId>
            </AssumedRoleUser>
            <Credentials>
              <SessionToken>AQoDYXdzEE0a8ANXXXXXXXXNO1ewxE5TijQyp+IEXAMPLE</SessionToken>
              <SecretAccessKey>\(secret)</SecretAccessKey>
              <Expiration>2014-10-24T23:00:23Z</Expiration>
              <AccessKeyId>ASgeIAIOSFODNN7EXAMPLE</AccessKeyId>
            </Credentials>
            <SourceIdentity>SourceIdentityValue</SourceIdentity>
            <Provider>www.amazon.com</Provider>
          </AssumeRoleWithWebIdentityResult>
          <ResponseMetadata><RequestId>ad4156e9-bce1-11e2-82e6-6b6efEXAMPLE</RequestId></ResponseMetadata>
        </AssumeRoleWithWebIdentityResponse>
        """

    @Test func stsAnswerIsRead() throws {
        let credentials = try CredentialsAnswer.sts(Array(Self.stsAnswer.utf8))
        #expect(credentials.accessKeyID == "ASgeIAIOSFODNN7EXAMPLE")
        #expect(credentials.secretAccessKey == Self.secret)
        #expect(credentials.sessionToken == "AQoDYXdzEE0a8ANXXXXXXXXNO1ewxE5TijQyp+IEXAMPLE")
        #expect(credentials.expiration == 1_414_191_623)
    }

    @Test func stsRefusalNamesItsCodeOnly() {
        let body = """
            <ErrorResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/">
              <Error><Type>Sender</Type><Code>InvalidIdentityToken</Code><Message>token eyJhbGciOi is bad</Message></Error>
            </ErrorResponse>
            """
        #expect(throws: CredentialsAnswer.Unusable("STS refused: InvalidIdentityToken")) { try CredentialsAnswer.sts(Array(body.utf8)) }
    }

    @Test(arguments: [
        "not xml",
        "<AssumeRoleWithWebIdentityResponse><AssumeRoleWithWebIdentityResult/></AssumeRoleWithWebIdentityResponse>",
        "<Other><AssumeRoleWithWebIdentityResult><Credentials/></AssumeRoleWithWebIdentityResult></Other>",
        """
        <AssumeRoleWithWebIdentityResponse><AssumeRoleWithWebIdentityResult><Credentials><AccessKeyId>A</AccessKeyId>\
        <SecretAccessKey>\(secret)</SecretAccessKey><Expiration>tomorrow</Expiration></Credentials>\
        </AssumeRoleWithWebIdentityResult></AssumeRoleWithWebIdentityResponse>
        """,
        """
        <AssumeRoleWithWebIdentityResponse><AssumeRoleWithWebIdentityResult><Credentials><AccessKeyId>A</AccessKeyId>\
        </Credentials></AssumeRoleWithWebIdentityResult></AssumeRoleWithWebIdentityResponse>
        """,
    ])
    func unusableSTSAnswersAreRefusedWithoutTheirSecrets(body: String) {
        do {
            _ = try CredentialsAnswer.sts(Array(body.utf8))
            Issue.record("accepted")
        } catch {
            #expect(!error.description.contains(Self.secret) && !error.description.contains("tomorrow"))
        }
    }

    @Test func containerAnswerIsRead() throws {
        let body = """
            {"RoleArn":"arn:aws:iam::123456789012:role/task","AccessKeyId":"ASIAEXAMPLE",\
            "SecretAccessKey":"\(Self.secret)","Token":"IQoJb3JpZ2luX2VjEXAMPLE","Expiration":"2026-11-30T12:00:00Z"}
            """
        let credentials = try CredentialsAnswer.json(Array(body.utf8), from: "the container endpoint")
        #expect(
            credentials
                == Credentials(
                    accessKeyID: "ASIAEXAMPLE", secretAccessKey: Self.secret, sessionToken: "IQoJb3JpZ2luX2VjEXAMPLE",
                    expiration: 1_796_040_000))
    }

    @Test func instanceMetadataAnswerIsRead() throws {
        let body = """
            {"Code":"Success","LastUpdated":"2026-11-30T11:00:00Z","Type":"AWS-HMAC","AccessKeyId":"ASIAIMDS",\
            "SecretAccessKey":"\(Self.secret)","Token":"token","Expiration":"2026-11-30T12:00:00.123Z"}
            """
        let credentials = try CredentialsAnswer.json(Array(body.utf8), from: "IMDS")
        #expect(credentials.accessKeyID == "ASIAIMDS" && credentials.expiration == 1_796_040_000)
    }

    @Test func anAnswerWithoutTokenOrExpirationIsLongLived() throws {
        let body = #"{"AccessKeyId":"GWKEY","SecretAccessKey":"s"}"#
        let credentials = try CredentialsAnswer.json(Array(body.utf8), from: "stand-in")
        #expect(credentials.sessionToken == nil && credentials.expiration == nil)
        let empty = #"{"AccessKeyId":"GWKEY","SecretAccessKey":"s","Token":"","Expiration":"2026-11-30T12:00:00+01:00"}"#
        let offset = try CredentialsAnswer.json(Array(empty.utf8), from: "stand-in")
        #expect(offset.sessionToken == nil && offset.expiration == 1_796_036_400)
    }

    @Test(arguments: [
        ("[]", "IMDS answered no JSON object"),
        (
            #"{"Code":"AssumeRoleUnauthorizedAccess","AccessKeyId":"A","SecretAccessKey":"S"}"#,
            "IMDS answered Code AssumeRoleUnauthorizedAccess"
        ),
        (#"{"SecretAccessKey":"S"}"#, "IMDS answered no AccessKeyId"),
        (#"{"AccessKeyId":"A"}"#, "IMDS answered no SecretAccessKey"),
        (#"{"AccessKeyId":"A","SecretAccessKey":"S","Expiration":"soon"}"#, "IMDS answered an Expiration that is not an RFC 3339 time"),
        (#"{"Code":"a secret value!","AccessKeyId":"A","SecretAccessKey":"S"}"#, "IMDS answered Code (unreadable code)"),
    ])
    func unusableJSONAnswersSayWhatIsWrong(body: String, message: String) {
        #expect(throws: CredentialsAnswer.Unusable(message)) { try CredentialsAnswer.json(Array(body.utf8), from: "IMDS") }
    }

    @Test(arguments: [
        ("https://creds.example.com/v1", true), ("http://127.0.0.1:8080/creds", true), ("http://localhost/x", true),
        ("http://169.254.170.2/v2/credentials", true), ("http://169.254.170.23/v1/credentials", true),
        ("http://[fd00:ec2::23]/v1/credentials", true), ("http://[::1]:9/x", true),
        ("http://169.254.169.254/latest", false), ("http://creds.example.com/v1", false), ("ftp://127.0.0.1/x", false),
        ("http://127.0.0.1@evil.example/x", false), ("https://", false), ("http://127.0.0.1/a b", false),
    ])
    func containerURLsFollowTheSDKsRule(url: String, allowed: Bool) {
        #expect(CredentialsSource.isAllowedContainerURL(url) == allowed)
    }
}

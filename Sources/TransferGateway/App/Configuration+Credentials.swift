import S3
import SigV4

/// The S3 credentials chain's settings, by the AWS SDKs' own variable names
/// (docs/configuration.md, "Credentials"), and the chain's choice among them.
public struct CredentialsChainSettings: Sendable, Equatable {
    public var webIdentityTokenFile: String?
    public var roleARN: String?
    public var roleSessionName: String?
    public var stsEndpoint: String?
    public var containerFullURI: String?
    public var containerRelativeURI: String?
    public var containerAuthorizationToken: String?
    public var containerAuthorizationTokenFile: String?
    public var instanceMetadataEndpoint: String?
    public var instanceMetadataDisabled = false

    public init() {}

    /// The name STS records for the session when `AWS_ROLE_SESSION_NAME` is unset.
    public static let defaultSessionName = "transfer-gateway"

    /// Reads the chain's variables; a malformed one stops start-up naming it.
    static func read(_ reader: EnvironmentReader) throws(Configuration.Invalid) -> CredentialsChainSettings {
        var s = CredentialsChainSettings()
        s.webIdentityTokenFile = try reader.string("AWS_WEB_IDENTITY_TOKEN_FILE")
        s.roleARN = try reader.string("AWS_ROLE_ARN")
        if s.webIdentityTokenFile != nil && s.roleARN == nil {
            throw Configuration.Invalid(variable: "AWS_ROLE_ARN", reason: "is required with AWS_WEB_IDENTITY_TOKEN_FILE")
        }
        if let name = try reader.string("AWS_ROLE_SESSION_NAME") {
            let allowed = name.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || "_+=,.@-".contains($0)) }
            guard (2...64).contains(name.utf8.count), allowed else {
                throw Configuration.Invalid(
                    variable: "AWS_ROLE_SESSION_NAME", reason: "must be 2 to 64 letters, digits or _+=,.@- (STS's rule), got '\(name)'")
            }
            s.roleSessionName = name
        }
        s.stsEndpoint = try reader.url("AWS_ENDPOINT_URL_STS")
        s.containerRelativeURI = try reader.string("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI")
        if let relative = s.containerRelativeURI, !relative.hasPrefix("/") || relative.contains(" ") {
            throw Configuration.Invalid(variable: "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", reason: "must be a path starting with /")
        }
        s.containerFullURI = try reader.string("AWS_CONTAINER_CREDENTIALS_FULL_URI")
        if let full = s.containerFullURI, !CredentialsSource.isAllowedContainerURL(full) {
            throw Configuration.Invalid(
                variable: "AWS_CONTAINER_CREDENTIALS_FULL_URI",
                reason: "must be https, or http to loopback, 169.254.170.2, 169.254.170.23 or [fd00:ec2::23]")
        }
        s.containerAuthorizationToken = try reader.string("AWS_CONTAINER_AUTHORIZATION_TOKEN", secret: true)
        s.containerAuthorizationTokenFile = try reader.string("AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE")
        s.instanceMetadataEndpoint = try reader.url("AWS_EC2_METADATA_SERVICE_ENDPOINT")
        s.instanceMetadataDisabled = try reader.bool("AWS_EC2_METADATA_DISABLED") ?? false
        return s
    }
}

extension Configuration {
    /// Where the S3 credentials come from, the first configured in the SDKs' order: static
    /// keys, a web identity token at STS, the container endpoint, and the instance metadata
    /// service (only when nothing else is configured and it is not disabled). Nil: none.
    public var s3CredentialsSource: CredentialsSource? {
        if s3AccessKeyID != nil || s3SecretAccessKey != nil { return .fixed(s3Credentials) }
        let chain = credentialsChain
        if let file = chain.webIdentityTokenFile, let role = chain.roleARN {
            return .webIdentity(
                CredentialsSource.WebIdentity(
                    tokenFile: file, roleARN: role, sessionName: chain.roleSessionName ?? CredentialsChainSettings.defaultSessionName,
                    endpoint: chain.stsEndpoint ?? "https://sts.\(s3Region).amazonaws.com"))
        }
        if let url = chain.containerRelativeURI.map({ CredentialsSource.containerHost + $0 }) ?? chain.containerFullURI {
            return .container(
                CredentialsSource.Container(
                    url: url, authorizationToken: chain.containerAuthorizationToken,
                    authorizationTokenFile: chain.containerAuthorizationTokenFile))
        }
        if !chain.instanceMetadataDisabled {
            return .instanceMetadata(endpoint: chain.instanceMetadataEndpoint ?? CredentialsSource.instanceMetadataEndpoint)
        }
        return nil
    }

    /// What S3 requests are signed with before a fetched source has answered: nothing usable
    /// (ended at 1970), so presigning answers 503 rather than sign with empty keys.
    static let noCredentialsYet = Credentials(accessKeyID: "", secretAccessKey: "", expiration: 0)

    /// The credentials the S3 client starts with: static ones, or none yet.
    var initialS3Credentials: Credentials {
        if case .fixed(let credentials) = s3CredentialsSource { return credentials }
        return Self.noCredentialsYet
    }
}

import SigV4

/// Where the S3 credentials come from: the AWS SDKs' standard chain, by their own variable
/// names, the first that is configured winning (AWS SDKs and Tools Reference Guide,
/// "Standardized credential providers"):
///
/// 1. static keys (`GATEWAY_S3_ACCESS_KEY_ID`…, falling back to `AWS_ACCESS_KEY_ID`…);
/// 2. a web identity token exchanged at STS (`AWS_WEB_IDENTITY_TOKEN_FILE` + `AWS_ROLE_ARN`):
///    EKS IRSA and any OIDC federation;
/// 3. the container credentials endpoint (`AWS_CONTAINER_CREDENTIALS_RELATIVE_URI`, then
///    `AWS_CONTAINER_CREDENTIALS_FULL_URI`): ECS task roles, EKS Pod Identity;
/// 4. the EC2 instance metadata service (IMDSv2), only when nothing above is configured and
///    `AWS_EC2_METADATA_DISABLED` is not `true`.
public enum CredentialsSource: Sendable, Equatable {
    case fixed(Credentials)
    case webIdentity(WebIdentity)
    case container(Container)
    case instanceMetadata(endpoint: String)

    /// STS `AssumeRoleWithWebIdentity` with the token read from `tokenFile` on every fetch
    /// (Kubernetes rotates the file).
    public struct WebIdentity: Sendable, Equatable {
        public var tokenFile: String
        public var roleARN: String
        public var sessionName: String
        /// STS's base URL (`AWS_ENDPOINT_URL_STS`, else `https://sts.{region}.amazonaws.com`).
        public var endpoint: String

        public init(tokenFile: String, roleARN: String, sessionName: String, endpoint: String) {
            self.tokenFile = tokenFile
            self.roleARN = roleARN
            self.sessionName = sessionName
            self.endpoint = endpoint
        }
    }

    /// A GET of `url` answering ECS-shaped JSON, with an `Authorization` header read from
    /// `authorizationTokenFile` on every fetch (EKS Pod Identity rotates it), else
    /// `authorizationToken`.
    public struct Container: Sendable, Equatable {
        public var url: String
        public var authorizationToken: String?
        public var authorizationTokenFile: String?

        public init(url: String, authorizationToken: String? = nil, authorizationTokenFile: String? = nil) {
            self.url = url
            self.authorizationToken = authorizationToken
            self.authorizationTokenFile = authorizationTokenFile
        }
    }

    /// The ECS agent's address, under which `AWS_CONTAINER_CREDENTIALS_RELATIVE_URI` lies.
    public static let containerHost = "http://169.254.170.2"
    /// The instance metadata service's address (`AWS_EC2_METADATA_SERVICE_ENDPOINT` overrides it).
    public static let instanceMetadataEndpoint = "http://169.254.169.254"

    /// Long-lived or temporary credentials that are never fetched again.
    public var isFixed: Bool {
        if case .fixed = self { return true }
        return false
    }

    /// A word for logs and `/readyz`: never a URL, a key or a path.
    public var name: String {
        switch self {
        case .fixed: return "static"
        case .webIdentity: return "web-identity"
        case .container: return "container"
        case .instanceMetadata: return "instance-metadata"
        }
    }

    /// Whether a `AWS_CONTAINER_CREDENTIALS_FULL_URI` may be used: https anywhere, http only to
    /// loopback or the ECS and EKS Pod Identity agents (169.254.170.2, 169.254.170.23,
    /// fd00:ec2::23), as the SDKs require. Names other than `localhost` are not resolved here:
    /// an http URL must name one of these addresses.
    public static func isAllowedContainerURL(_ url: String) -> Bool {
        let lower = url.lowercased()
        guard url.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else { return false }
        if lower.hasPrefix("https://") { return lower.count > "https://".count }
        guard lower.hasPrefix("http://") else { return false }
        let authority = lower.dropFirst("http://".count).prefix { $0 != "/" && $0 != "?" && $0 != "#" }
        guard !authority.contains("@") else { return false }
        let host: Substring
        if authority.hasPrefix("[") {
            host = authority.prefix { $0 != "]" } + "]"
        } else {
            host = authority.prefix { $0 != ":" }
        }
        let allowed = ["localhost", "[::1]", "169.254.170.2", "169.254.170.23", "[fd00:ec2::23]"]
        return allowed.contains(String(host)) || host.hasPrefix("127.")
    }
}

/// AWS credentials. Long-lived keys have no expiration; temporary ones carry a session token
/// and the moment they stop working (seconds since 1970), which caps presigned URL lifetimes.
public struct Credentials: Sendable, Equatable {
    public var accessKeyID: String
    public var secretAccessKey: String
    public var sessionToken: String?
    public var expiration: Int?

    public init(accessKeyID: String, secretAccessKey: String, sessionToken: String? = nil, expiration: Int? = nil) {
        self.accessKeyID = accessKeyID
        self.secretAccessKey = secretAccessKey
        self.sessionToken = sessionToken
        self.expiration = expiration
    }
}

extension Credentials: CustomStringConvertible {
    /// Never shows the secret or the token.
    public var description: String { "Credentials(\(accessKeyID), secret: <redacted>)" }
}

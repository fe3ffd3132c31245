import Crypto

/// Gateway-signed links to a download job's data (`dataUrl`), to a job's event stream and to an
/// identity's event feed (`eventsUrl`, for `EventSource`, which cannot send a header): the job
/// id (or the identity) and an expiry under an
/// HMAC-SHA256 made with `GATEWAY_LINK_SECRET`, so the link needs no `Authorization` header
/// (`<a href download>`, media players, background download tasks) and any instance that
/// shares the secret serves it. A link lives at most `lifetime` seconds; its expiry is rounded
/// down to the minute, so a job polled once a second shows one link, not sixty.
public struct DataLinks: Sendable {
    let secret: [UInt8]
    let lifetime: Int
    let now: @Sendable () -> Int

    public init(secret: [UInt8], lifetime: Int = 3000, now: @escaping @Sendable () -> Int) {
        self.secret = secret
        self.lifetime = lifetime
        self.now = now
    }

    /// What a link opens; a link made for one opens nothing else.
    enum Purpose: String, Sendable {
        case data = "data-link"
        case events = "events-link"
        /// An identity's event feed (`GET /v1/events`): the subject is the identity, not a job.
        case feed = "feed-link"
    }

    /// The expiry a link made now carries, seconds since 1970.
    func expiry() -> Int { (now() + lifetime) / 60 * 60 }

    /// The query of a fresh link to `jobID`'s data (or events): `expires=…&signature=…`.
    func query(jobID: String, for purpose: Purpose = .data) -> String {
        query(jobID: jobID, expires: expiry(), for: purpose)
    }

    /// The query of a link to `jobID` (or an identity) that expires at `expires`.
    func query(jobID: String, expires: Int, for purpose: Purpose) -> String {
        "expires=\(expires)&signature=\(signature(jobID: jobID, expires: expires, purpose: purpose))"
    }

    /// Whether `expires` and `signature` make a link to `jobID` that is valid now.
    func valid(jobID: String, expires: String?, signature: String?, for purpose: Purpose = .data) -> Bool {
        guard let expires, let signature, expires.utf8.count <= 12, let seconds = Int(expires), seconds >= now(),
            seconds <= now() + lifetime
        else { return false }
        return Digest.constantTimeEqual(Array(signature.utf8), Array(self.signature(jobID: jobID, expires: seconds, purpose: purpose).utf8))
    }

    /// A `Host` value fit to be written into a URL: a host name or address and a port, no more.
    static func plausibleHost(_ host: String) -> Bool {
        !host.isEmpty && host.utf8.count <= 255
            && host.utf8.allSatisfy { byte in
                (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A)
                    || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "-") || byte == UInt8(ascii: ":")
                    || byte == UInt8(ascii: "[") || byte == UInt8(ascii: "]")
            }
    }

    private func signature(jobID: String, expires: Int, purpose: Purpose) -> String {
        Digest.hex(Digest.hmacSHA256(key: secret, Array("\(purpose.rawValue)\n\(jobID)\n\(expires)".utf8)))
    }
}

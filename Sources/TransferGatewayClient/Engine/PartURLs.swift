import Foundation

/// A client upload's presigned part URLs, each with its expiry. A URL within `margin` seconds of
/// expiring, or refused by S3 as expired, is signed again through `POST /v1/uploads/{id}/parts`
/// (in batches of the parts still to send), so a transfer longer than a URL's life goes on.
actor PartURLs {
    private let api: GatewayAPI
    private let uploadID: String
    private let pending: [Int]
    private let margin: TimeInterval
    private var urls: [Int: (url: URL, expires: Date)] = [:]
    /// Checksummed URLs, by part and the checksum they sign, with the headers to send.
    private var checked: [Int: (checksum: String, url: URL, headers: [String: String], expires: Date)] = [:]
    private(set) var signings = 0

    init(api: GatewayAPI, uploadID: String, pending: [Int], margin: TimeInterval = 60) {
        self.api = api
        self.uploadID = uploadID
        self.pending = pending
        self.margin = margin
    }

    /// Keeps URLs the gateway handed out with the upload.
    func add(_ parts: [API.PartURL], expiresAt: String) {
        let expires = API.date(expiresAt) ?? Date()
        for part in parts { if let url = URL(string: part.url) { urls[part.partNumber] = (url, expires) } }
    }

    /// A URL for part `number` that is not about to expire.
    func url(for number: Int) async throws -> URL {
        if let entry = urls[number], entry.expires.timeIntervalSinceNow > margin { return entry.url }
        let later = pending.filter { $0 > number && (urls[$0]?.expires.timeIntervalSinceNow ?? 0) <= margin }
        let batch = [number] + later.prefix(99)
        let signed = try await api.signParts(uploadID, batch)
        signings += 1
        add(signed.parts, expiresAt: signed.expiresAt)
        guard let entry = urls[number] else { throw TransferError(.badResponse, "the gateway signed no URL for part \(number)") }
        return entry.url
    }

    /// A URL for part `number` that signs `checksum` (its CRC-32C, base64), and the headers
    /// to send with it; signed one part at a time, since a part's sum is known once it is read.
    func url(for number: Int, checksum: String) async throws -> (url: URL, headers: [String: String]) {
        if let entry = checked[number], entry.checksum == checksum, entry.expires.timeIntervalSinceNow > margin {
            return (entry.url, entry.headers)
        }
        let signed = try await api.signCheckedParts(uploadID, [(number, checksum)])
        signings += 1
        guard let part = signed.parts.first(where: { $0.partNumber == number }), let url = URL(string: part.url) else {
            throw TransferError(.badResponse, "the gateway signed no URL for part \(number)")
        }
        let headers = part.headers ?? [:]
        checked[number] = (checksum, url, headers, API.date(signed.expiresAt) ?? Date())
        return (url, headers)
    }

    /// S3 refused part `number`'s URL as expired: the next ask signs it again.
    func expire(_ number: Int) {
        urls[number] = nil
        checked[number] = nil
    }
}

import Foundation

extension TransferClient {
    /// How a client reaches the gateway and moves bytes. Every field has a default but the
    /// gateway's URL.
    public struct Configuration: Codable, Hashable, Sendable {
        /// The gateway's base URL (`https://files.example.com`); the API is under `v1/`.
        public var gatewayURL: URL
        /// Names this client: its records live in `stateDirectory/identifier/`, so two clients
        /// with different identifiers never see each other's tasks.
        public var identifier: String
        /// Where task records are kept across relaunches (default: Application Support's
        /// `TransferGatewayClient/`).
        public var stateDirectory: URL
        /// Retries of one request after network errors, 429 and 5xx (0 tries once), as
        /// TransferUtility's `retryLimit`.
        public var retryLimit: Int
        /// Parts of one client upload in flight at once, as TransferUtility's
        /// `multiPartConcurrencyLimit`.
        public var partConcurrency: Int
        /// The part size to ask for (bytes, at least 5 MiB); `nil` takes the gateway's
        /// (`GATEWAY_PART_SIZE`, 5 MiB, larger when a file needs more than 10,000 parts).
        public var partSize: Int64?
        /// At most this many bytes per second over all of this client's transfers; `nil` for no
        /// limit. Requests start no sooner than the bytes before them would have moved at it; an
        /// upload job also asks the gateway to read its bytes no faster.
        public var bandwidthLimit: Int64?
        /// Whether requests may use cellular networks (Apple platforms).
        public var allowsCellularAccess: Bool
        /// Files smaller than this (bytes) go through an upload job; larger ones are sent
        /// straight to S3 as a client upload. 16 MiB by default.
        public var smallFileThreshold: Int64
        /// Seconds a request may wait for the next byte before it counts as a network error.
        public var requestTimeout: TimeInterval
        /// Client uploads sum each part (CRC-32C) and have its URL sign the sum, so S3 refuses a
        /// part changed on the way (it is sent again), and the completion is held to the whole
        /// file's CRC-32C. On by default; off for a gateway from before checksums.
        public var partChecksums: Bool = true

        /// A configuration; see each property for its meaning.
        public init(
            gatewayURL: URL, identifier: String = "default", stateDirectory: URL? = nil, retryLimit: Int = 3,
            partConcurrency: Int = 5, partSize: Int64? = nil, bandwidthLimit: Int64? = nil, allowsCellularAccess: Bool = true,
            smallFileThreshold: Int64 = 16 << 20, requestTimeout: TimeInterval = 60
        ) {
            self.gatewayURL = gatewayURL
            self.identifier = identifier
            self.stateDirectory = stateDirectory ?? Self.defaultStateDirectory
            self.retryLimit = retryLimit
            self.partConcurrency = partConcurrency
            self.partSize = partSize
            self.bandwidthLimit = bandwidthLimit
            self.allowsCellularAccess = allowsCellularAccess
            self.smallFileThreshold = smallFileThreshold
            self.requestTimeout = requestTimeout
        }

        /// Application Support's `TransferGatewayClient/` (`~/.local/share/…` on Linux).
        public static var defaultStateDirectory: URL {
            let base =
                FileManager.default.urls(for: .applicationSupportDirectory, in: .userDomainMask).first
                ?? FileManager.default.temporaryDirectory
            return base.appendingPathComponent("TransferGatewayClient", isDirectory: true)
        }
    }
}

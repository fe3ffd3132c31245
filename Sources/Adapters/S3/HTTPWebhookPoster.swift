import Gateway
import S3

/// `WebhookPoster` over the S3 client's curl engine: one POST to the operator's receiver,
/// behind the address guard (anywhere but link-local addresses, unless
/// `GATEWAY_IMPORT_ALLOW_HOSTS` lists the host). A failure is told by its code only: the URL
/// may carry a credential of the receiver's, and it never reaches a log line.
public struct HTTPWebhookPoster: WebhookPoster {
    let fetcher: URLFetcher
    let url: String
    /// The most one POST may take, connection to last byte of the answer (within the lease).
    let timeoutSeconds: Int

    public init(fetcher: URLFetcher, url: String, timeoutSeconds: Int = 30) {
        self.fetcher = fetcher
        self.url = url
        self.timeoutSeconds = timeoutSeconds
    }

    public func post(body: [UInt8], headers: [(String, String)]) async -> WebhookPostResult {
        do {
            return .answered(status: try await fetcher.post(url, body: body, headers: headers, timeoutSeconds: timeoutSeconds))
        } catch let error as S3Error {
            return .unreachable(error.code)
        } catch let error as URLFetcher.FetchError {
            switch error {
            case .refused(.forbidden): return .unreachable("ForbiddenAddress")
            case .refused(.unresolvable): return .unreachable("UnresolvableHost")
            case .badURL: return .unreachable("InvalidURL")
            case .tooManyRedirects: return .unreachable("TooManyRedirects")
            }
        } catch {
            return .unreachable("Other")
        }
    }
}

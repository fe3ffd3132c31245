import Gateway
import S3

/// The `SourceAddressCheck` port over the guarded URL fetcher of imports: the same rules and
/// exemptions the fetcher applies when the job runs, its look-up bounded by `timeout`.
public struct URLSourceAddressCheck: SourceAddressCheck {
    let fetcher: URLFetcher
    let timeout: Duration

    public init(fetcher: URLFetcher, timeout: Duration = .seconds(2)) {
        self.fetcher = fetcher
        self.timeout = timeout
    }

    public func refusal(of sourceURL: String) async -> SourceAddressRefusal? {
        guard case .refused(let host, let port, let address, let rule) = await fetcher.precheck(sourceURL, timeout: timeout) else {
            return nil
        }
        return SourceAddressRefusal(host: host, port: port, address: address, rule: rule)
    }
}

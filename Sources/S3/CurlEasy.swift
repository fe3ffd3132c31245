import CCurl
import Dispatch

/// One blocking HTTP exchange over a libcurl easy handle. Call only from a thread the caller
/// owns (never Swift's cooperative pool). The response body is kept up to `bodyLimit` bytes.
struct CurlEasy {
    struct Response: Sendable {
        var status: Int
        var headers: [(String, String)]
        var body: [UInt8]
    }

    struct Failure: Error, CustomStringConvertible {
        let code: Int
        let description: String
    }

    /// curl_global_init must run once before any handle; a static let runs it exactly once.
    private static let initialized: Bool = curl_global_init(Int(CURL_GLOBAL_DEFAULT)) == CURLE_OK

    private final class Collector {
        var headers: [(String, String)] = []
        var body: [UInt8] = []
        let limit: Int
        init(limit: Int) { self.limit = limit }
    }

    static func perform(method: String, url: String, headers: [(String, String)],
                        timeout: Double, bodyLimit: Int = 1 << 20) throws -> Response {
        guard initialized, let handle = curl_easy_init() else {
            throw Failure(code: -1, description: "libcurl could not start")
        }
        defer { curl_easy_cleanup(handle) }
        var list: UnsafeMutablePointer<curl_slist>?
        for (name, value) in headers { list = curl_slist_append(list, "\(name): \(value)") }
        list = curl_slist_append(list, "Expect:")
        defer { curl_slist_free_all(list) }
        let collector = Collector(limit: bodyLimit)
        let box = Unmanaged.passRetained(collector)
        defer { box.release() }

        _ = tg_easy_setopt_str(handle, CURLOPT_URL, url)
        _ = tg_easy_setopt_long(handle, CURLOPT_NOSIGNAL, 1)
        _ = tg_easy_setopt_long(handle, CURLOPT_TIMEOUT_MS, Int(timeout * 1000))
        _ = tg_easy_setopt_long(handle, CURLOPT_CONNECTTIMEOUT_MS, Int(min(timeout, 10) * 1000))
        _ = tg_easy_setopt_slist(handle, CURLOPT_HTTPHEADER, list)
        if method == "HEAD" {
            _ = tg_easy_setopt_long(handle, CURLOPT_NOBODY, 1)
        } else if method != "GET" {
            _ = tg_easy_setopt_str(handle, CURLOPT_CUSTOMREQUEST, method)
        }
        _ = tg_easy_setopt_ptr(handle, CURLOPT_WRITEDATA, box.toOpaque())
        _ = tg_easy_setopt_datafn(handle, CURLOPT_WRITEFUNCTION) { data, size, count, user in
            let collector = Unmanaged<Collector>.fromOpaque(user!).takeUnretainedValue()
            let n = size * count
            if let data, collector.body.count < collector.limit {
                let take = min(n, collector.limit - collector.body.count)
                data.withMemoryRebound(to: UInt8.self, capacity: take) {
                    collector.body.append(contentsOf: UnsafeBufferPointer(start: $0, count: take))
                }
            }
            return n
        }
        _ = tg_easy_setopt_ptr(handle, CURLOPT_HEADERDATA, box.toOpaque())
        _ = tg_easy_setopt_datafn(handle, CURLOPT_HEADERFUNCTION) { data, size, count, user in
            let collector = Unmanaged<Collector>.fromOpaque(user!).takeUnretainedValue()
            let n = size * count
            if let data {
                let line: String = data.withMemoryRebound(to: UInt8.self, capacity: n) {
                    String(decoding: UnsafeBufferPointer(start: $0, count: n), as: UTF8.self)
                }
                if let colon = line.firstIndex(of: ":") {
                    let name = String(line[..<colon])
                    let value = String(line[line.index(after: colon)...]).trimmingCharacters(in: " \t\r\n")
                    collector.headers.append((name, value))
                } else if line.hasPrefix("HTTP/") {
                    collector.headers.removeAll()
                }
            }
            return n
        }
        let code = curl_easy_perform(handle)
        guard code == CURLE_OK else {
            throw Failure(code: Int(code.rawValue), description: String(cString: curl_easy_strerror(code)))
        }
        var status = 0
        _ = tg_easy_getinfo_long(handle, CURLINFO_RESPONSE_CODE, &status)
        return Response(status: status, headers: collector.headers, body: collector.body)
    }
}

extension String {
    fileprivate func trimmingCharacters(in set: String) -> String {
        var s = Substring(self)
        while let f = s.first, set.contains(f) { s.removeFirst() }
        while let l = s.last, set.contains(l) { s.removeLast() }
        return String(s)
    }
}

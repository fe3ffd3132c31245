import Striped
import Synchronization

/// Prometheus metrics kept in memory and rendered in the text exposition format (0.0.4).
/// Labels are route patterns, never raw paths, so the number of series stays bounded.
public final class Metrics: Sendable {
    static let latencyBuckets: [Double] = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60]

    private struct RequestKey: Hashable { let route: String; let method: String; let status: Int }
    private struct Histogram {
        var counts = [Int](repeating: 0, count: Metrics.latencyBuckets.count)
        var sum = 0.0
        var total = 0

        mutating func record(_ seconds: Double, bucket: Int?) {
            if let bucket { counts[bucket] += 1 }
            sum += seconds
            total += 1
        }
    }
    private struct State {
        var requests: [RequestKey: Int] = [:]
        var latency: [String: Histogram] = [:]
        var counters: [String: Int] = [:]
    }

    private let state = Striped<State> { State() }
    /// Read at render time: open connections, and any other live value.
    private let gauges: Mutex<[(String, String, @Sendable () -> Int)]> = Mutex([])

    public init() {}

    /// Methods get their own label; anything else is `OTHER`, so no request can add a series.
    static func methodLabel(_ method: String) -> String {
        switch method {
        case "GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS": return method
        default: return "OTHER"
        }
    }

    public func recordRequest(route: String, method: String, status: Int, seconds: Double) {
        let bucket = Metrics.latencyBuckets.firstIndex { seconds <= $0 }
        state.withLocalLock { s in
            s.requests[RequestKey(route: route, method: method, status: status), default: 0] += 1
            // In place: a copy taken out and put back would copy its counts on every request.
            s.latency[route, default: Histogram()].record(seconds, bucket: bucket)
        }
    }

    /// Adds to a plain counter, e.g. `gateway_job_part_failures_total{type="copy",code="throttled"}`.
    public func increment(_ series: String, by amount: Int = 1) {
        state.withLocalLock { $0.counters[series, default: 0] += amount }
    }

    /// A gauge computed when scraped.
    public func registerGauge(name: String, help: String, _ read: @escaping @Sendable () -> Int) {
        gauges.withLock { $0.append((name, help, read)) }
    }

    public func render() -> String {
        var s = State()
        for stripe in state.stripes {
            let part = stripe.lock.withLock { $0 }
            s.requests.merge(part.requests, uniquingKeysWith: +)
            s.counters.merge(part.counters, uniquingKeysWith: +)
            for (route, h) in part.latency {
                var merged = s.latency[route] ?? Histogram()
                for i in merged.counts.indices { merged.counts[i] += h.counts[i] }
                merged.sum += h.sum
                merged.total += h.total
                s.latency[route] = merged
            }
        }
        var out = "# HELP gateway_http_requests_total HTTP requests by route, method and status.\n"
        out += "# TYPE gateway_http_requests_total counter\n"
        for (key, count) in s.requests.sorted(by: {
            ($0.key.route, $0.key.method, $0.key.status) < ($1.key.route, $1.key.method, $1.key.status)
        }) {
            out += "gateway_http_requests_total{route=\"\(key.route)\",method=\"\(key.method)\",status=\"\(key.status)\"} \(count)\n"
        }
        out += "# HELP gateway_http_request_duration_seconds Time from request head to response, by route.\n"
        out += "# TYPE gateway_http_request_duration_seconds histogram\n"
        for (route, h) in s.latency.sorted(by: { $0.key < $1.key }) {
            var cumulative = 0
            for (i, bound) in Metrics.latencyBuckets.enumerated() {
                cumulative += h.counts[i]
                out += "gateway_http_request_duration_seconds_bucket{route=\"\(route)\",le=\"\(bound)\"} \(cumulative)\n"
            }
            out += "gateway_http_request_duration_seconds_bucket{route=\"\(route)\",le=\"+Inf\"} \(h.total)\n"
            out += "gateway_http_request_duration_seconds_sum{route=\"\(route)\"} \(h.sum)\n"
            out += "gateway_http_request_duration_seconds_count{route=\"\(route)\"} \(h.total)\n"
        }
        for (series, value) in s.counters.sorted(by: { $0.key < $1.key }) {
            out += "\(series) \(value)\n"
        }
        for (name, help, read) in gauges.withLock({ $0 }) {
            out += "# HELP \(name) \(help)\n# TYPE \(name) gauge\n\(name) \(read())\n"
        }
        return out
    }
}

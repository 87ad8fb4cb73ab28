import Synchronization

/// Counters and histograms for `GET /metrics`, in the Prometheus text format.
package final class Metrics: Sendable {
    /// Upper bounds of the latency buckets, in seconds.
    static let latencyBuckets: [Double] = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5]
    /// Upper bounds of the write batch size buckets.
    static let batchBuckets: [Double] = [1, 2, 4, 8, 16, 32, 64, 128, 256]

    struct Histogram {
        var buckets: [UInt64]
        var sum: Double = 0
        var count: UInt64 = 0
        init(_ bounds: [Double]) { buckets = Array(repeating: 0, count: bounds.count) }
        mutating func observe(_ value: Double, bounds: [Double]) {
            for (i, bound) in bounds.enumerated() where value <= bound { buckets[i] += 1 }
            sum += value
            count += 1
        }
    }

    private struct State {
        var requests: [RequestKey: UInt64] = [:]
        var latency: [String: Histogram] = [:]
        var merges: [String: UInt64] = [:]
        var batchSizes = Histogram(Metrics.batchBuckets)
        var commitLatency = Histogram(Metrics.latencyBuckets)
    }
    /// Route and status of a request count: a struct, not an interpolated String, so counting
    /// allocates nothing (route names are built once per route).
    private struct RequestKey: Hashable {
        var route: String
        var status: Int
    }
    private let state = Mutex(State())
    /// Gauges read at scrape time (open connections, database size), set by the wiring.
    private let gauges = Mutex<[String: @Sendable () -> Double]>([:])

    package init() {}

    func recordRequest(route: String, status: Int, nanos: UInt64) {
        let seconds = Double(nanos) / 1e9
        state.withLock { state in
            state.requests[RequestKey(route: route, status: status), default: 0] += 1
            state.latency[route, default: Histogram(Self.latencyBuckets)].observe(seconds, bounds: Self.latencyBuckets)
        }
    }

    /// Counts a merge by shape (rename, absorb, link, none).
    package func recordMerge(shape: String) {
        state.withLock { $0.merges[shape, default: 0] += 1 }
    }

    /// Observes one group commit of the writer.
    package func recordCommit(batchSize: Int, duration: Duration) {
        let seconds = Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
        state.withLock { state in
            state.batchSizes.observe(Double(batchSize), bounds: Self.batchBuckets)
            state.commitLatency.observe(seconds, bounds: Self.latencyBuckets)
        }
    }

    /// Registers a gauge read at each scrape, e.g. `buzzkit_open_connections`.
    package func setGauge(_ name: String, _ read: @escaping @Sendable () -> Double) {
        gauges.withLock { $0[name] = read }
    }

    /// The exposition text.
    package func render() -> String {
        var out = ""
        let snapshot = state.withLock { $0 }
        out += "# HELP buzzkit_http_requests_total Requests answered, by route and status.\n"
        out += "# TYPE buzzkit_http_requests_total counter\n"
        // Sorted as the former "route\0status" string keys were: by route, then status as text.
        let requests = snapshot.requests.sorted {
            ($0.key.route, String($0.key.status)) < ($1.key.route, String($1.key.status))
        }
        for (key, count) in requests {
            out += "buzzkit_http_requests_total{route=\"\(key.route)\",status=\"\(key.status)\"} \(count)\n"
        }
        out += "# HELP buzzkit_http_request_duration_seconds Time from routing to the response, by route.\n"
        out += "# TYPE buzzkit_http_request_duration_seconds histogram\n"
        for (route, histogram) in snapshot.latency.sorted(by: { $0.key < $1.key }) {
            out += Self.render("buzzkit_http_request_duration_seconds", histogram, bounds: Self.latencyBuckets, labels: "route=\"\(route)\",")
        }
        out += "# HELP buzzkit_merges_total Identify and merge outcomes, by shape.\n"
        out += "# TYPE buzzkit_merges_total counter\n"
        for (shape, count) in snapshot.merges.sorted(by: { $0.key < $1.key }) {
            out += "buzzkit_merges_total{shape=\"\(shape)\"} \(count)\n"
        }
        out += "# HELP buzzkit_write_batch_size Write requests committed together in one transaction.\n"
        out += "# TYPE buzzkit_write_batch_size histogram\n"
        out += Self.render("buzzkit_write_batch_size", snapshot.batchSizes, bounds: Self.batchBuckets, labels: "")
        out += "# HELP buzzkit_commit_duration_seconds Duration of one group commit, fsync included.\n"
        out += "# TYPE buzzkit_commit_duration_seconds histogram\n"
        out += Self.render("buzzkit_commit_duration_seconds", snapshot.commitLatency, bounds: Self.latencyBuckets, labels: "")
        for (name, read) in gauges.withLock({ $0 }).sorted(by: { $0.key < $1.key }) {
            out += "# TYPE \(name) gauge\n\(name) \(Self.number(read()))\n"
        }
        return out
    }

    private static func render(_ name: String, _ h: Histogram, bounds: [Double], labels: String) -> String {
        var out = ""
        for (i, bound) in bounds.enumerated() {
            out += "\(name)_bucket{\(labels)le=\"\(number(bound))\"} \(h.buckets[i])\n"
        }
        out += "\(name)_bucket{\(labels)le=\"+Inf\"} \(h.count)\n"
        let bare = labels.isEmpty ? "" : "{\(labels.dropLast())}"
        out += "\(name)_sum\(bare) \(number(h.sum))\n\(name)_count\(bare) \(h.count)\n"
        return out
    }

    private static func number(_ v: Double) -> String {
        v == v.rounded() && abs(v) < 1e15 ? String(Int64(v)) : String(v)
    }
}

import Glibc
import Identity
import Synchronization

/// Counters and histograms for `GET /metrics`, in the Prometheus text format.
package final class Metrics: Sendable {
    /// Upper bounds of the latency buckets, in seconds.
    static let latencyBuckets: [Double] = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5]
    /// Upper bounds of the write batch size buckets.
    static let batchBuckets: [Double] = [1, 2, 4, 8, 16, 32, 64, 128, 256]

    struct Histogram {
        /// Observations by the first bound they fit under, not Prometheus's cumulative `le`
        /// counts: one increment per observation (a request's latency used to bump every bucket
        /// above it). `render` adds them up; values above the last bound are only in `count`.
        var buckets: [UInt64]
        var sum: Double = 0
        var count: UInt64 = 0
        init(_ bounds: [Double]) { buckets = Array(repeating: 0, count: bounds.count) }
        mutating func observe(_ value: Double, bounds: [Double]) {
            var i = 0
            while i < bounds.count && value > bounds[i] { i += 1 }
            if i < buckets.count { buckets[i] += 1 }
            sum += value
            count += 1
        }
        /// Adds another histogram over the same bounds (merging shards).
        mutating func add(_ other: Histogram) {
            for i in buckets.indices { buckets[i] += other.buckets[i] }
            sum += other.sum
            count += other.count
        }
    }

    private struct State {
        var merges: [String: UInt64] = [:]
        var webhookDeliveries: [String: UInt64] = [:]
        var refusedMerges: [String: UInt64] = [:]
        var storageErrors: [String: UInt64] = [:]
        var batchSizes = Histogram(Metrics.batchBuckets)
        var commitLatency = Histogram(Metrics.latencyBuckets)
        var logSyncLatency = Histogram(Metrics.latencyBuckets)
        var logRestartLatency = Histogram(Metrics.latencyBuckets)
    }
    /// Counts and latencies of one route: one dictionary entry per route, so a request costs
    /// one lookup. Statuses per route are few, a short list beats a second hash.
    private struct RouteStats {
        var statuses: [(status: Int, count: UInt64)] = []
        var latency = Histogram(Metrics.latencyBuckets)

        mutating func record(status: Int, seconds: Double) {
            if let i = statuses.firstIndex(where: { $0.status == status }) {
                statuses[i].count += 1
            } else {
                statuses.append((status, 1))
            }
            latency.observe(seconds, bounds: Metrics.latencyBuckets)
        }
    }
    /// The request counters by route slot (`routeSlot`), one copy per thread.
    private let routes = PerThread<[RouteStats]> { [] }
    private let state = Mutex(State())
    /// Route labels by slot.
    private let routeNames = Mutex<[String]>([])
    /// Gauges read at scrape time (open connections, database size), set by the wiring.
    private let gauges = Mutex<[String: @Sendable () -> Double]>([:])

    package init() {}

    /// The number a route's requests are counted under (`recordRequest`), the same for the same
    /// name: requests are counted in arrays by it, with no string hashed per request.
    package func routeSlot(_ name: String) -> Int {
        routeNames.withLock { names in
            if let slot = names.firstIndex(of: name) { return slot }
            names.append(name)
            return names.count - 1
        }
    }

    func recordRequest(slot: Int, status: Int, nanos: UInt64) {
        let seconds = Double(nanos) / 1e9
        routes.withLock { routes in
            if slot >= routes.count { routes += repeatElement(RouteStats(), count: slot + 1 - routes.count) }
            routes[slot].record(status: status, seconds: seconds)
        }
    }

    /// Counts a merge by shape (rename, absorb, link, none).
    package func recordMerge(shape: String) {
        state.withLock { $0.merges[shape, default: 0] += 1 }
    }

    /// Counts one webhook delivery attempt by how it ended (succeeded, failed, disabled).
    package func recordWebhookDelivery(result: String) {
        state.withLock { $0.webhookDeliveries[result, default: 0] += 1 }
    }

    /// Counts a merge that did not happen, by the refusal's code (`alias_limit_reached`…).
    package func recordMergeRefusal(_ refusal: MergeRefusal) {
        let reason = refusal.error.code.rawValue
        state.withLock { $0.refusedMerges[reason, default: 0] += 1 }
    }

    /// Counts a storage failure no request saw (a checkpoint, a PRAGMA, a skipped setting).
    package func recordStorageError(operation: String) {
        state.withLock { $0.storageErrors[operation, default: 0] += 1 }
    }

    /// Observes one group commit of the writer.
    package func recordCommit(batchSize: Int, duration: Duration) {
        state.withLock { state in
            state.batchSizes.observe(Double(batchSize), bounds: Self.batchBuckets)
            state.commitLatency.observe(Self.seconds(duration), bounds: Self.latencyBuckets)
        }
    }

    /// Observes one sync of the write-ahead log by the completion thread.
    package func recordLogSync(duration: Duration) {
        state.withLock { $0.logSyncLatency.observe(Self.seconds(duration), bounds: Self.latencyBuckets) }
    }

    /// Observes one restart of the write-ahead log by the checkpoint thread.
    package func recordLogRestart(duration: Duration) {
        state.withLock { $0.logRestartLatency.observe(Self.seconds(duration), bounds: Self.latencyBuckets) }
    }

    private static func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }

    /// Registers a gauge read at each scrape, e.g. `buzzkit_open_connections`.
    package func setGauge(_ name: String, _ read: @escaping @Sendable () -> Double) {
        gauges.withLock { $0[name] = read }
    }

    /// The exposition text.
    package func render() -> String {
        var out = ""
        let snapshot = state.withLock { $0 }
        // The shards merged: per route and status, and per route.
        var requests: [RequestKey: UInt64] = [:]
        var latency: [String: Histogram] = [:]
        let names = routeNames.withLock { $0 }
        routes.forEach { routes in
            for (slot, stats) in routes.enumerated() where !stats.statuses.isEmpty {
                let route = names[slot]
                for entry in stats.statuses {
                    requests[RequestKey(route: route, status: entry.status), default: 0] += entry.count
                }
                latency[route, default: Histogram(Self.latencyBuckets)].add(stats.latency)
            }
        }
        out += "# HELP buzzkit_http_requests_total Requests answered, by route and status.\n"
        out += "# TYPE buzzkit_http_requests_total counter\n"
        // Sorted as the former "route\0status" string keys were: by route, then status as text.
        let sortedRequests = requests.sorted {
            ($0.key.route, String($0.key.status)) < ($1.key.route, String($1.key.status))
        }
        for (key, count) in sortedRequests {
            out += "buzzkit_http_requests_total{route=\"\(key.route)\",status=\"\(key.status)\"} \(count)\n"
        }
        out += "# HELP buzzkit_http_request_duration_seconds Time from routing to the response, by route.\n"
        out += "# TYPE buzzkit_http_request_duration_seconds histogram\n"
        for (route, histogram) in latency.sorted(by: { $0.key < $1.key }) {
            out += Self.render(
                "buzzkit_http_request_duration_seconds", histogram, bounds: Self.latencyBuckets,
                labels: "route=\"\(route)\",")
        }
        out += "# HELP buzzkit_merges_total Identify and merge outcomes, by shape.\n"
        out += "# TYPE buzzkit_merges_total counter\n"
        for (shape, count) in snapshot.merges.sorted(by: { $0.key < $1.key }) {
            out += "buzzkit_merges_total{shape=\"\(shape)\"} \(count)\n"
        }
        out += "# HELP buzzkit_webhook_deliveries_total Webhook delivery attempts, by result.\n"
        out += "# TYPE buzzkit_webhook_deliveries_total counter\n"
        for (result, count) in snapshot.webhookDeliveries.sorted(by: { $0.key < $1.key }) {
            out += "buzzkit_webhook_deliveries_total{result=\"\(result)\"} \(count)\n"
        }
        out += "# HELP buzzkit_merges_refused_total Merges not made, by reason (the warning or error code).\n"
        out += "# TYPE buzzkit_merges_refused_total counter\n"
        for (reason, count) in snapshot.refusedMerges.sorted(by: { $0.key < $1.key }) {
            out += "buzzkit_merges_refused_total{reason=\"\(reason)\"} \(count)\n"
        }
        out += "# HELP buzzkit_storage_errors_total Storage failures no request saw (checkpoints, PRAGMAs, settings).\n"
        out += "# TYPE buzzkit_storage_errors_total counter\n"
        for (operation, count) in snapshot.storageErrors.sorted(by: { $0.key < $1.key }) {
            out += "buzzkit_storage_errors_total{operation=\"\(operation)\"} \(count)\n"
        }
        out += "# HELP buzzkit_write_batch_size Write requests committed together in one transaction.\n"
        out += "# TYPE buzzkit_write_batch_size histogram\n"
        out += Self.render("buzzkit_write_batch_size", snapshot.batchSizes, bounds: Self.batchBuckets, labels: "")
        out += "# HELP buzzkit_commit_duration_seconds Duration of one group's COMMIT on the writer thread.\n"
        out += "# TYPE buzzkit_commit_duration_seconds histogram\n"
        out += Self.render(
            "buzzkit_commit_duration_seconds", snapshot.commitLatency, bounds: Self.latencyBuckets, labels: "")
        out += "# HELP buzzkit_wal_sync_duration_seconds One fdatasync of the SQLite log, off the writer thread, "
        out += "for the groups committed before it.\n"
        out += "# TYPE buzzkit_wal_sync_duration_seconds histogram\n"
        out += Self.render(
            "buzzkit_wal_sync_duration_seconds", snapshot.logSyncLatency, bounds: Self.latencyBuckets, labels: "")
        out += "# HELP buzzkit_wal_restart_duration_seconds One RESTART checkpoint of the SQLite log; "
        out += "new writes wait for it.\n"
        out += "# TYPE buzzkit_wal_restart_duration_seconds histogram\n"
        out += Self.render(
            "buzzkit_wal_restart_duration_seconds", snapshot.logRestartLatency, bounds: Self.latencyBuckets,
            labels: "")
        for (name, read) in gauges.withLock({ $0 }).sorted(by: { $0.key < $1.key }) {
            out += "# TYPE \(name) gauge\n\(name) \(Self.number(read()))\n"
        }
        return out
    }

    private static func render(_ name: String, _ h: Histogram, bounds: [Double], labels: String) -> String {
        var out = ""
        var atOrBelow: UInt64 = 0
        for (i, bound) in bounds.enumerated() {
            atOrBelow += h.buckets[i]
            out += "\(name)_bucket{\(labels)le=\"\(number(bound))\"} \(atOrBelow)\n"
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

/// Route and status of a request count, for merging shards at scrape time.
private struct RequestKey: Hashable {
    var route: String
    var status: Int
}

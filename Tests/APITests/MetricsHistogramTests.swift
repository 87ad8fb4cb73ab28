import Testing

@testable import API

/// `GET /metrics` histograms are Prometheus's: each `le` bucket counts every observation at or
/// below its bound, `+Inf` equals `_count`. Kept per bucket inside, added up when rendered.
struct MetricsHistogramTests {
    /// The lines of `render()` that start with `prefix`, in order.
    private func lines(_ metrics: Metrics, _ prefix: String) -> [String] {
        metrics.render().split(separator: "\n").map(String.init).filter { $0.hasPrefix(prefix) }
    }

    @Test func bucketsAreCumulativeAndInfCountsEverything() {
        let metrics = Metrics()
        // Bounds 1, 2, 4, 8, 16, 32, 64, 128, 256: one on a bound, two inside, one past the last.
        for size in [1, 3, 3, 20, 300] { metrics.recordCommit(batchSize: size, duration: .milliseconds(1)) }
        #expect(
            lines(metrics, "buzzkit_write_batch_size") == [
                #"buzzkit_write_batch_size_bucket{le="1"} 1"#,
                #"buzzkit_write_batch_size_bucket{le="2"} 1"#,
                #"buzzkit_write_batch_size_bucket{le="4"} 3"#,
                #"buzzkit_write_batch_size_bucket{le="8"} 3"#,
                #"buzzkit_write_batch_size_bucket{le="16"} 3"#,
                #"buzzkit_write_batch_size_bucket{le="32"} 4"#,
                #"buzzkit_write_batch_size_bucket{le="64"} 4"#,
                #"buzzkit_write_batch_size_bucket{le="128"} 4"#,
                #"buzzkit_write_batch_size_bucket{le="256"} 4"#,
                #"buzzkit_write_batch_size_bucket{le="+Inf"} 5"#,
                "buzzkit_write_batch_size_sum 327",
                "buzzkit_write_batch_size_count 5",
            ])
    }

    @Test func requestLatencyFromSeveralThreadsAddsUpPerBucket() async {
        let metrics = Metrics()
        let slot = metrics.routeSlot("GET /healthz")
        // 0.3 ms, 0.7 ms, 3 ms and 3 s from four tasks (the shards are per thread), twice each.
        let nanos: [UInt64] = [300_000, 700_000, 3_000_000, 3_000_000_000]
        await withTaskGroup(of: Void.self) { group in
            for value in nanos {
                group.addTask {
                    for _ in 0..<2 { metrics.recordRequest(slot: slot, status: 200, nanos: value) }
                }
            }
        }
        let buckets = lines(metrics, #"buzzkit_http_request_duration_seconds_bucket{route="GET /healthz""#)
            .map { $0.split(separator: " ").last.map(String.init) ?? "" }
        // le = 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, +Inf
        #expect(buckets == ["2", "4", "4", "6", "6", "6", "6", "6", "6", "6", "6", "6", "8"])
    }
}

import Glibc
import Postgres
import Synchronization
import Threads

/// The tenant's unverified app calls per hour, in the `unverified_calls` table so the 24-hour
/// count covers every server. Calls are counted in memory and added to the table about once
/// a minute (one upsert per tenant and hour, not one write per call); a count is what the
/// table holds plus what this server has not flushed yet. Another server's calls thus show
/// within one flush interval.
final class UnverifiedCallBuckets: Sendable {
    private struct State {
        /// Not yet flushed: tenant → hour → calls.
        var pending: [String: [Int64: Int]] = [:]
        /// Taken by a flush that has not committed yet (still counted).
        var flushing: [String: [Int64: Int]] = [:]
    }

    private let pool: ConnectionPool
    private let state = Mutex(State())
    private let stopped = Atomic<Bool>(false)
    private let started = Atomic<Bool>(false)
    private let finished = Semaphore()

    init(pool: ConnectionPool) { self.pool = pool }

    func record(tenantID: String, nowMillis: Int64) {
        let hour = nowMillis / 3_600_000
        state.withLock { $0.pending[tenantID, default: [:]][hour, default: 0] += 1 }
    }

    /// Calls in the 24 hours before `nowMillis`; this server's unflushed calls only, when the
    /// database cannot be read.
    func count(tenantID: String, nowMillis: Int64) -> Int {
        let hour = nowMillis / 3_600_000
        let local = state.withLock { state in
            [state.pending[tenantID], state.flushing[tenantID]].compactMap { $0 }
                .flatMap { $0 }.filter { $0.key > hour - 24 }.map(\.value).reduce(0, +)
        }
        let stored =
            (try? pool.withConnection { db in
                try db.queryOne(
                    "SELECT coalesce(sum(calls), 0)::bigint FROM unverified_calls WHERE tenant_id = $1 AND hour > $2",
                    [tenantID, hour - 24])?.int(0)
            }) ?? nil
        return local + Int(stored ?? 0)
    }

    /// Starts the flushing thread.
    func startFlushing(every interval: Duration) {
        guard started.compareExchange(expected: false, desired: true, ordering: .relaxed).exchanged else { return }
        let millis = max(
            10, Int(interval.components.seconds * 1000 + interval.components.attoseconds / 1_000_000_000_000_000))
        NamedThread.detach(name: "pg-usage-flush") { [self] in
            var waited = 0
            while !stopped.load(ordering: .relaxed) {
                usleep(50_000)
                waited += 50
                if waited >= millis {
                    waited = 0
                    flush()
                }
            }
            finished.signal()
        }
    }

    /// Stops the thread, then flushes what is left.
    func stop() {
        stopped.store(true, ordering: .relaxed)
        if started.load(ordering: .relaxed) { finished.wait() }
        flush()
    }

    /// Adds the pending counts to the table in one transaction; on failure they stay pending.
    func flush() {
        let taken = state.withLock { state -> [String: [Int64: Int]] in
            let taken = state.pending
            state.pending = [:]
            state.flushing = taken
            return taken
        }
        guard !taken.isEmpty else { return }
        do {
            try pool.withConnection { db in
                try db.retryingTransaction {
                    for (tenant, hours) in taken {
                        for (hour, calls) in hours {
                            try db.execute(
                                """
                                INSERT INTO unverified_calls (tenant_id, hour, calls) VALUES ($1, $2, $3)
                                ON CONFLICT (tenant_id, hour) DO UPDATE SET calls = unverified_calls.calls + excluded.calls
                                """, [tenant, hour, calls])
                        }
                    }
                    // Hours past the window are never read again.
                    let oldest = (taken.values.flatMap(\.keys).min() ?? 0) - 48
                    try db.execute("DELETE FROM unverified_calls WHERE hour < $1", [oldest])
                }
            }
            state.withLock { $0.flushing = [:] }
        } catch {
            state.withLock { state in
                for (tenant, hours) in state.flushing {
                    for (hour, calls) in hours { state.pending[tenant, default: [:]][hour, default: 0] += calls }
                }
                state.flushing = [:]
            }
        }
    }
}

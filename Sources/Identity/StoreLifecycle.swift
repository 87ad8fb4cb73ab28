/// What `buzzkit serve` needs from a store besides reads and writes, so the CLI never reaches
/// into an engine (checkpoints, listeners, pools are the store's business).
package protocol StoreLifecycle: Sendable {
    /// Starts the store's background upkeep (SQLite: WAL checkpoints; PostgreSQL: the listener
    /// for other servers' changes, the flush of usage counters). Called once, before serving.
    func startMaintenance() throws
    /// Throws when the database cannot serve now (`/readyz`).
    func checkReady() throws
    /// Gauges for `/metrics`, by metric name (pool use, retries, cache size…).
    func gauges() -> [(name: String, value: Double)]
    /// Finishes queued writes and closes every connection.
    func close()
    /// True when a read waits on a round trip to a database server (PostgreSQL), so callers
    /// should not read on a thread that serves others meanwhile (an event loop).
    var readsWaitOnAServer: Bool { get }
}

/// A store that tells when workspaces, tenants or keys changed, so the API's authentication
/// cache drops what it holds: for a change made through this process, before that write's
/// completion runs; for one made by another server on the same database, within a second.
package protocol AuthenticationChangeSource: Sendable {
    /// Registers `handler`; it may run on any thread.
    func onAuthenticationChange(_ handler: @escaping @Sendable () -> Void)
}

/// The tenant's count of app calls made without an identity proof over the last 24 hours
/// (API.md §12: on PostgreSQL it covers every server).
package protocol UnverifiedCallLedger: Sendable {
    /// Counts one call; cheap (no database write per call).
    func recordUnverifiedCall(tenantID: String, nowMillis: Int64)
    /// Calls in the 24 hours before `nowMillis`.
    func unverifiedCalls(tenantID: String, nowMillis: Int64) -> Int
}

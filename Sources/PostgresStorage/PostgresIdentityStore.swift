import Glibc
import Identity
import Migrations
import Postgres
import Synchronization
import Threads

/// `IdentityStore` on PostgreSQL, for any number of `buzzkit serve` processes sharing one
/// database (API.md §12). A sibling of `SQLiteIdentityStore`: the domain and the API are the same.
///
/// - Reads run in `REPEATABLE READ READ ONLY` transactions on pooled connections: one snapshot
///   per read, so a read that starts after any server acknowledged a write sees it.
/// - Subscriber snapshots (`GET /v1/subscribers/{id}`) are read in batches and cached, each
///   cached one checked against its row's version first (see ``PostgresSnapshotReader``).
/// - Writes are queued to a few writer threads that commit in groups (see ``PostgresWriter``).
/// - Changes to workspaces, tenants and keys are announced with `NOTIFY`; a listener connection
///   on every server empties the auth cache (see ``AuthChangeListener``).
/// - The unverified-call count is kept per tenant and hour in the database, flushed from
///   per-process counters about once a minute (see ``UnverifiedCallBuckets``).
package final class PostgresIdentityStore: IdentityStore, StoreLifecycle, AuthenticationChangeSource,
    UnverifiedCallLedger
{
    /// Where the database is and how much of it one server may use.
    package struct Configuration: Sendable {
        /// A `postgres://` or `postgresql://` URL (or a libpq `key=value` string).
        package var url: String
        /// Connections this server opens at most (readers and writers together).
        package var poolSize = 10
        /// Writer threads, each committing one group at a time; at most `poolSize - 1`. A group's
        /// statements are round trips on one connection, so one writer leaves PostgreSQL mostly
        /// idle: with 4, identify went from 535 to 1,671 req/s at 64 connections (bench/README.md,
        /// "PostgreSQL"). Groups on the same subscriber queue on its row lock; a deadlock between
        /// two groups is retried.
        package var writerThreads = 4
        /// Jobs per write transaction at most.
        package var maxWriteBatch = 64
        /// Rough bytes of subscriber snapshots kept in memory, each checked before use; 0 reads
        /// every snapshot whole.
        package var snapshotCacheBytes = 64 << 20
        /// Snapshot statements in flight at once, each on its own connection (and thread). One
        /// gathers more reads per statement (18 against 9) and beat two on two cores: 27-33k
        /// GET/s against 23-27k, interleaved runs at 64 connections.
        package var snapshotStatementsInFlight = 1
        /// How often per-process unverified-call counts are added to the database.
        package var usageFlushInterval: Duration = .seconds(60)
        package init(url: String) { self.url = url }
    }

    /// The `NOTIFY` channel for changes to workspaces, tenants and keys.
    static let authChannel = "buzzkit_auth"

    private let configuration: Configuration
    private let pool: ConnectionPool
    private let writer: PostgresWriter
    private let observers = Observers()
    private let listener: AuthChangeListener
    private let usage: UnverifiedCallBuckets
    private let purge: RetiredPurge
    private let readRetries = Atomic<Int>(0)
    private let snapshotCache: SnapshotCache?
    private let snapshotReader: PostgresSnapshotReader

    /// True when `database` names a PostgreSQL database rather than a SQLite file.
    package static func handles(_ database: String) -> Bool {
        database.hasPrefix("postgres://") || database.hasPrefix("postgresql://")
    }

    /// Told of what no caller sees (a stored tenant setting that was skipped), for the log.
    package typealias ErrorHandler = @Sendable (_ operation: String, _ error: any Error) -> Void
    private let onError: ErrorHandler?

    /// Connects, applies pending migrations (under the advisory lock), and starts the writers.
    /// - Parameters:
    ///   - configuration: Where and how much.
    ///   - onError: See ``ErrorHandler``.
    package init(configuration: Configuration, onError: ErrorHandler? = nil) throws {
        self.configuration = configuration
        self.onError = onError
        try Self.migrate(url: configuration.url)
        let pool = ConnectionPool(url: configuration.url, maxConnections: max(2, configuration.poolSize))
        self.pool = pool
        let observers = self.observers
        let cache =
            configuration.snapshotCacheBytes > 0 ? SnapshotCache(budgetBytes: configuration.snapshotCacheBytes) : nil
        snapshotCache = cache
        snapshotReader = PostgresSnapshotReader(
            pool: pool, cache: cache, statementsInFlight: configuration.snapshotStatementsInFlight)
        let purgeBox = PurgeBox()
        let usage = UnverifiedCallBuckets(pool: pool)
        self.usage = usage
        writer = PostgresWriter(
            pool: pool, threads: min(max(1, configuration.writerThreads), max(1, configuration.poolSize - 1)),
            maxBatch: configuration.maxWriteBatch, onSkipped: onError,
            onUnverifiedCalls: { calls in
                for call in calls { usage.record(tenantID: call.tenantID, nowMillis: call.nowMillis) }
            }
        ) { effects in
            if effects.authChanged { observers.notify() }
            if effects.retired { purgeBox.purge?.request() }
        }
        listener = AuthChangeListener(url: configuration.url, channel: Self.authChannel) { observers.notify() }
        purge = RetiredPurge(writer: writer)
        purgeBox.purge = purge
        purge.request()  // whatever a previous run retired and did not finish purging
    }

    /// Applies the embedded PostgreSQL migrations this database has not seen.
    /// - Returns: the file names applied.
    @discardableResult
    package static func migrate(url: String) throws -> [String] {
        let connection = try Connection(url: url)
        defer { connection.close() }
        return try Migrator(migrations: bundledMigrations()).migrate(connection).map(\.identifier)
    }

    /// The migrations compiled into this binary from `migrations/postgres/`.
    package static func bundledMigrations() throws -> [Migration] {
        try embeddedPostgresMigrations.map { try Migration(fileName: $0.fileName, sql: $0.contents) }
    }

    // MARK: - IdentityStore

    package func read<T>(_ body: (any IdentityReadContext) throws -> T) throws -> T {
        // A pooled connection may have died since its last use (a server restart): the first
        // try fails before reading anything, and a second one gets a fresh connection.
        var attempt = 0
        while true {
            attempt += 1
            do {
                return try pool.withConnection { db in
                    try db.transaction(.repeatableRead, readOnly: true) {
                        try body(PostgresContext(db: db, onSkipped: onError))
                    }
                }
            } catch let error as PostgresError where error.isConnectionFailure && attempt == 1 {
                readRetries.add(1, ordering: .relaxed)
                pool.discardIdle()
            } catch let error as PostgresError {
                throw Self.domainError(error)
            }
        }
    }

    /// The snapshot `id` reaches, as of a statement that began after this call: from the cache
    /// when the database says the cached version is current, else read whole. Nothing older
    /// than a write any server acknowledged before this call can come back (API.md §12).
    package func snapshot(tenantID: String, id: String) throws -> SubscriberSnapshot? {
        try snapshotReader.snapshot(tenantID: tenantID, id: id)
    }

    /// The same, answered on one of the reader's statement threads.
    package func snapshot(
        tenantID: String, id: String, completion: @escaping @Sendable (Result<SubscriberSnapshot?, any Error>) -> Void
    ) {
        snapshotReader.snapshot(tenantID: tenantID, id: id, completion: completion)
    }

    package func write<T: Sendable>(
        _ body: @escaping @Sendable (any IdentityWriteContext) throws -> T,
        completion: @escaping @Sendable (Result<T, any Error>) -> Void
    ) {
        writer.submit(
            PostgresWriter.Job(
                perform: { context in
                    let value = try body(context)
                    return { completion(.success(value)) }
                },
                fail: { error in completion(.failure(error)) }))
    }

    /// Blocking write, for the CLI and tests.
    package func write<T: Sendable>(_ body: @escaping @Sendable (any IdentityWriteContext) throws -> T) throws -> T {
        let done = Semaphore()
        let result = Mutex<Result<T, any Error>?>(nil)
        write(body) { outcome in
            result.withLock { $0 = outcome }
            done.signal()
        }
        done.wait()
        return try result.withLock { $0! }.get()
    }

    /// Operator-fixable database conditions answer `503 unavailable`; anything else stays a bug (500).
    static func domainError(_ error: any Error) -> any Error {
        guard let error = error as? PostgresError else { return error }
        let reason: String
        if error.isConnectionFailure {
            reason = "The database cannot be reached."
        } else if error.sqlState == "53300" {
            reason = "The database is busy (no connection free); retry shortly."
        } else if error.isInsufficientResources {
            reason = "The database is out of resources (disk, memory or connections)."
        } else if error.isReadOnly {
            reason = "The database is read-only."
        } else if PostgresWriter.isRetryable(error) {
            reason = "The database is busy with conflicting writes; retry shortly."
        } else {
            return error
        }
        return IdentityError(code: .unavailable, message: reason)
    }

    // MARK: - StoreLifecycle

    package func startMaintenance() throws {
        listener.start()
        usage.startFlushing(every: configuration.usageFlushInterval)
    }

    package var readsWaitOnAServer: Bool { true }

    package func checkReady() throws {
        do {
            _ = try pool.withConnection { try $0.query("SELECT 1") }
        } catch {
            throw Self.domainError(error)
        }
    }

    package func gauges() -> [(name: String, value: Double)] {
        let pool = pool.statistics
        return [
            ("buzzkit_db_pool_connections_open", Double(pool.open)),
            ("buzzkit_db_pool_connections_in_use", Double(pool.inUse)),
            ("buzzkit_db_pool_connections_max", Double(pool.maxConnections)),
            ("buzzkit_db_pool_waiting", Double(pool.waiting)),
            ("buzzkit_db_pool_waits_total", Double(pool.waits)),
            ("buzzkit_db_pool_discarded_total", Double(pool.discarded)),
            ("buzzkit_db_write_retries_total", Double(writer.retries.load(ordering: .relaxed))),
            (
                "buzzkit_db_read_retries_total",
                Double(
                    readRetries.load(ordering: .relaxed) + snapshotReader.connectionRetries.load(ordering: .relaxed))
            ),
            ("buzzkit_db_write_groups_total", Double(writer.commits.load(ordering: .relaxed))),
            ("buzzkit_db_listener_reconnects_total", Double(listener.reconnects)),
            ("buzzkit_snapshot_batches_total", Double(snapshotReader.batches.load(ordering: .relaxed))),
            ("buzzkit_snapshot_reads_total", Double(snapshotReader.questions.load(ordering: .relaxed))),
            ("buzzkit_snapshot_cache_hits_total", Double(snapshotReader.hits.load(ordering: .relaxed))),
            ("buzzkit_snapshot_cache_entries", Double(snapshotCache?.count ?? 0)),
        ]
    }

    /// Drains queued writes, flushes usage counts, stops the listener, closes every connection.
    package func close() {
        writer.close()
        snapshotReader.close()
        usage.stop()
        listener.stop()
        pool.close()
    }

    // MARK: - AuthenticationChangeSource

    package func onAuthenticationChange(_ handler: @escaping @Sendable () -> Void) {
        observers.add(handler)
    }

    // MARK: - UnverifiedCallLedger

    package func recordUnverifiedCall(tenantID: String, nowMillis: Int64) {
        // Told from inside a write job, the call waits for the job's last try: a try that loses
        // a race and runs again must not count the request twice.
        if writer.hold(UnverifiedCall(tenantID: tenantID, nowMillis: nowMillis)) { return }
        usage.record(tenantID: tenantID, nowMillis: nowMillis)
    }

    package func unverifiedCalls(tenantID: String, nowMillis: Int64) -> Int {
        usage.count(tenantID: tenantID, nowMillis: nowMillis)
    }

    /// Snapshot batches answered, snapshots asked for, and those answered from the checked cache (tests).
    package var snapshotBatches: Int { snapshotReader.batches.load(ordering: .relaxed) }
    package var snapshotReads: Int { snapshotReader.questions.load(ordering: .relaxed) }
    package var snapshotCacheHits: Int { snapshotReader.hits.load(ordering: .relaxed) }

    /// Pool use now (tests).
    package var poolStatistics: ConnectionPool.Statistics { pool.statistics }
    /// Retried write groups and jobs since start (tests, `/metrics`).
    package var writeRetries: Int { writer.retries.load(ordering: .relaxed) }
}

/// The auth-change handlers, called from the writer threads and the listener.
private final class Observers: Sendable {
    private let handlers = Mutex<[@Sendable () -> Void]>([])

    func add(_ handler: @escaping @Sendable () -> Void) { handlers.withLock { $0.append(handler) } }

    func notify() {
        for handler in handlers.withLock({ $0 }) { handler() }
    }
}

/// Lets the writer's commit hook reach the purge, which needs the writer to exist first.
private final class PurgeBox: @unchecked Sendable {
    // Set once in init before any write is submitted; read afterwards only.
    var purge: RetiredPurge?
}

/// Deletes retired subscribers' events a chunk at a time, one small job per write group, as
/// the SQLite store does.
final class RetiredPurge: Sendable {
    static let chunk = 1000

    private let writer: PostgresWriter
    private let chain = JobChain()

    init(writer: PostgresWriter) { self.writer = writer }

    /// Makes sure a purge job runs after this point.
    @Sendable func request() {
        if chain.request() { submit() }
    }

    private func submit() {
        writer.submit(
            PostgresWriter.Job(
                perform: { [self] context in
                    let worked = try context.purgeRetired(limit: Self.chunk)
                    return { if self.chain.finished(didWork: worked) { self.submit() } }
                },
                fail: { [self] _ in chain.failed() }))
    }
}

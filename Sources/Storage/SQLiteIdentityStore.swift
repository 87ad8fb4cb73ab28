import Glibc
import Identity
import Migrations
import SQLite
import Synchronization
import Threads

/// `IdentityStore` on SQLite in WAL mode: one writer thread committing in groups, and a pool of
/// reader connections that never wait for it.
package final class SQLiteIdentityStore: IdentityStore, StoreLifecycle, AuthenticationChangeSource {
    /// Where the database lives and how it is opened.
    package struct Configuration: Sendable {
        package var path: String
        package var readerCount = 4
        package var synchronous: Database.Options.Synchronous = .full
        package var busyTimeout: Duration = .seconds(5)
        package var maxWriteBatch = 256
        /// Rough bytes of recently read subscriber snapshots kept in memory; 0 turns the cache off.
        package var snapshotCacheBytes = 64 << 20
        package init(path: String) { self.path = path }
    }

    package let writer: DatabaseWriter
    private let onError: DatabaseErrorHandler?
    private let readers: DatabaseReaderPool
    /// Deletes retired subscribers' events in the background (see `retireSubscriber`).
    private let purge: RetiredPurge
    /// Each tenant's enabled webhook filters, for the writer's "is this event wanted" probe.
    private let webhookFilters: WebhookFilterCache
    /// The writer's outbox buffer and delivery keys.
    private let outbox = OutboxWriter()
    /// Snapshots by the id they were read for; nil when configured off.
    private let snapshots: SnapshotCache?
    /// Told after a write to workspaces, tenants or keys commits, before its completion runs.
    private let authObservers = AuthObservers()
    private let path: String

    /// Opens the database, applies pending migrations, and starts the writer.
    /// - Parameters:
    ///   - onCommit: observes each group commit (batch size, duration) for metrics.
    ///   - onSync: observes each sync of the log off the writer thread (duration) for metrics.
    ///   - onLogRestart: observes each restart of the log, which new writes wait for (duration),
    ///     for metrics.
    ///   - onError: told of what no caller sees: failed checkpoints and PRAGMAs on the writer,
    ///     stored tenant settings that were skipped. For the log and a metric.
    package init(
        configuration: Configuration,
        onCommit: (@Sendable (_ batchSize: Int, _ commitDuration: Duration) -> Void)? = nil,
        onSync: (@Sendable (_ syncDuration: Duration) -> Void)? = nil,
        onLogRestart: (@Sendable (_ restartDuration: Duration) -> Void)? = nil,
        onError: DatabaseErrorHandler? = nil
    ) throws {
        path = configuration.path
        self.onError = onError
        webhookFilters = WebhookFilterCache()
        var options = Database.Options()
        options.synchronous = configuration.synchronous
        options.busyTimeout = configuration.busyTimeout
        try Self.migrate(path: configuration.path, options: options)
        let cache =
            configuration.snapshotCacheBytes > 0 ? SnapshotCache(budgetBytes: configuration.snapshotCacheBytes) : nil
        let changes = SubscriberChanges()
        snapshots = cache
        // With the cache on, the writer's connection reports what each group changed, and the
        // group's callers are answered only after those subscribers left the cache.
        var setUp: ((Database) throws -> Void)?
        var afterGroup: (@Sendable () -> Void)?
        if let cache {
            setUp = { db in
                try db.createIntegerObserver(SubscriberChanges.functionName) { changes.record($0) }
                try db.execute(SubscriberChanges.triggersSQL)
            }
            afterGroup = { cache.invalidate(changes.take()) }
        }
        // The webhook filter cache and the outbox learn of each group's end, committed or not (see
        // their rules). The outbox keeps the events of the jobs whose work stays, and writes them
        // just before the group commits.
        let (filters, outbox) = (webhookFilters, self.outbox)
        let snapshotsAfterGroup = afterGroup
        afterGroup = {
            snapshotsAfterGroup?()
            filters.groupEnded()
            outbox.groupEnded()
        }
        writer = try DatabaseWriter(
            path: configuration.path, options: options, maxBatch: configuration.maxWriteBatch, onCommit: onCommit,
            onSync: onSync, onLogRestart: onLogRestart,
            setUp: setUp, afterJob: { kept in outbox.jobEnded(kept: kept) },
            beforeCommit: { db in try SQLiteContext(db: db, webhookFilters: filters, outbox: outbox).writeGroupOutbox()
            },
            afterGroup: afterGroup, onError: onError)
        var readOptions = options
        readOptions.readOnly = true
        // Every write of a serving process goes through `writer` (`ServerLock` keeps other
        // servers off the file), so its commit count says when a loop's read is stale.
        let writer = self.writer
        readers = try DatabaseReaderPool(
            path: configuration.path, count: configuration.readerCount, options: readOptions,
            commitCount: { writer.groupsEnded })
        purge = RetiredPurge(writer: writer)
        purge.request()  // whatever a previous run retired and did not finish purging
    }

    /// Applies the embedded migrations that this database has not seen.
    /// - Returns: the file names applied.
    @discardableResult
    package static func migrate(path: String, options: Database.Options = .init()) throws -> [String] {
        let db = try Database(path: path, options: options)
        defer { db.close() }
        return try Migrator(migrations: bundledMigrations()).migrate(db).map { "\(zeroPadded($0.version))_\($0.name)" }
    }

    /// Finishes every absorb whose events are still moving (migration 0006), so that a reader
    /// of the raw tables (`buzzkit copy`) finds each event on its person. A serving process may
    /// be moving them too: each chunk is its own transaction, so the two only take turns.
    /// - Returns: the number of events moved.
    @discardableResult
    package static func finishEventMoves(path: String) throws -> Int {
        var readOnly = Database.Options()
        readOnly.readOnly = true
        let pending = try Database(path: path, options: readOnly)
        let any = try pending.hasTable("event_moves") && SQLiteContext(db: pending).anyEventMove() != nil
        pending.close()
        guard any else { return 0 }
        let db = try Database(path: path)
        defer { db.close() }
        func moveOneChunk() throws -> Int? {
            try db.transaction {
                let ctx = SQLiteContext(db: db)
                // No one waits on these transactions but the copy: big chunks, few of them.
                return try ctx.anyEventMove().map { try ctx.moveEvents($0, limit: SQLiteContext.finishChunk) }
            }
        }
        var moved = 0
        while let chunk = try moveOneChunk() { moved += chunk }
        return moved
    }

    /// The migrations compiled into this binary from the top-level `migrations/` folder.
    package static func bundledMigrations() throws -> [Migration] {
        try embeddedMigrations.map { try Migration(fileName: $0.fileName, sql: $0.contents) }
    }

    package func read<T>(_ body: (any IdentityReadContext) throws -> T) throws -> T {
        do {
            return try readers.read { db in try body(SQLiteContext(db: db, onSkipped: onError)) }
        } catch let error as SQLiteError {
            throw Self.domainError(error)
        }
    }

    /// The snapshot `id` reaches, from the cache when a read since the last change to that
    /// subscriber stored it. Every change goes through the writer, whose triggers invalidate.
    package func snapshot(tenantID: String, id: String) throws -> SubscriberSnapshot? {
        guard let snapshots else { return try readSnapshot(tenantID: tenantID, id: id) }
        let (cached, epoch) = snapshots.lookup(tenantID: tenantID, id: id)
        if let cached { return cached }
        let snapshot = try readSnapshot(tenantID: tenantID, id: id)
        if let snapshot { snapshots.store(snapshot, tenantID: tenantID, id: id, epoch: epoch) }
        return snapshot
    }

    /// A hit of the snapshot cache: coherent with every acknowledged write (see `SnapshotCache`).
    package func cachedSnapshot(tenantID: String, id: String) -> SubscriberSnapshot? {
        snapshots?.lookup(tenantID: tenantID, id: id).snapshot
    }

    /// A hit of the snapshot cache's kept rendering: coherent as `cachedSnapshot` is.
    package func cachedRendering(tenantID: String, id: String) -> CachedRendering? {
        snapshots?.rendering(tenantID: tenantID, id: id)
    }

    /// Snapshots held by the cache now (tests, `/metrics`).
    package var cachedSnapshotCount: Int { snapshots?.count ?? 0 }

    package func write<T: Sendable>(
        _ body: @escaping @Sendable (any IdentityWriteContext) throws -> T,
        completion: @escaping @Sendable (Result<T, any Error>) -> Void
    ) {
        writer.submit(
            StoreWrite(
                store: self, body: body, completion: completion, handBack: LoopIteration.handBackToCurrent))
    }

    /// A write job's connection, as this store's writes see it.
    fileprivate func writeContext(_ db: Database, authChanges: any AuthChangeMark) -> SQLiteContext {
        SQLiteContext(
            db: db, retiredPurge: purge, onSkipped: onError, authChanges: authChanges, webhookFilters: webhookFilters,
            outbox: outbox, storedIdentities: StoredIdentities())
    }

    /// Told after a write job that changed authentication committed, before its completion.
    fileprivate func announceAuthChange() { authObservers.notify() }

    /// Database conditions an operator can fix (disk full, read-only file, I/O errors, a lock held
    /// too long) answer `503 unavailable` with a clear message; anything else stays a bug (500).
    static func domainError(_ error: SQLiteError) -> any Error {
        let reason: String
        if error.isFull {
            reason = "The database disk is full; writes resume once space is freed."
        } else if error.isReadOnly {
            reason = "The database is read-only."
        } else if error.isIOError {
            reason = "The database hit an I/O error."
        } else if error.isBusy {
            reason = "The database is busy; retry shortly."
        } else {
            return error
        }
        return IdentityError(code: .unavailable, message: reason)
    }

    /// Blocking write, for the CLI and tests.
    package func write<T: Sendable>(_ body: @escaping @Sendable (any IdentityWriteContext) throws -> T) throws -> T {
        let authChanged = AuthChangeFlag()
        defer { if authChanged.isSet { authObservers.notify() } }
        return try writer.write { [self] db in try body(writeContext(db, authChanges: authChanged)) }
    }

    // MARK: - Lifecycle, auth changes

    package func onAuthenticationChange(_ handler: @escaping @Sendable () -> Void) {
        authObservers.add(handler)
    }

    /// Checkpoints the WAL in the background every second.
    package func startMaintenance() throws {
        try writer.checkpointInBackground(every: .seconds(1))
    }

    package var readsWaitOnAServer: Bool { false }

    package func checkReady() throws {
        _ = try read { ctx in try ctx.workspaceExists(id: "") }
    }

    package func gauges() -> [(name: String, value: Double)] {
        [
            ("buzzkit_snapshot_cache_entries", Double(cachedSnapshotCount)),
            ("buzzkit_database_bytes", Double(fileSize(path) + fileSize(path + "-wal"))),
        ]
    }

    /// Drains queued writes, checkpoints and closes every connection.
    /// Readers close first: SQLite checkpoints and deletes the WAL only when the last connection
    /// to close can write, and the readers are read-only.
    package func close() {
        readers.close()
        writer.close()
    }
}

/// Marked on the writer thread while a job runs (``SQLiteContext/authChanges``), read in its
/// completion, after the job's group committed: whether the job wrote a workspace, tenant or key.
protocol AuthChangeMark: AnyObject, Sendable {
    func markAuthChanged()
}

/// The mark of a blocking write (``SQLiteIdentityStore/write(_:)``).
private final class AuthChangeFlag: AuthChangeMark {
    private let value = Atomic<Bool>(false)
    func markAuthChanged() { value.store(true, ordering: .relaxed) }
    var isSet: Bool { value.load(ordering: .relaxed) }
}

/// One write of the store from the loop that asks to the loop that renders its answer: the work,
/// its completion, its outcome and its auth-change mark in one object, where closures over the
/// writer's closures made eight allocations a write, made on the loop, read on the writer and
/// freed on the completion thread or the loop (`bench/identify-instructions.sh`).
///
/// `@unchecked Sendable`: `value` is written by `run` on the writer thread and read by `complete`
/// after the writer's hand-offs (``WriterJob/complete(_:)``); `authChanged` is atomic.
private final class StoreWrite<T: Sendable>: WriterJob, AuthChangeMark, @unchecked Sendable {
    private let store: SQLiteIdentityStore
    private let body: @Sendable (any IdentityWriteContext) throws -> T
    private let completion: @Sendable (Result<T, any Error>) -> Void
    /// The submitting loop, which renders the answer (nil off a loop: completed where it ends).
    let handBack: LoopIteration.HandBack?
    private let authChanged = Atomic<Bool>(false)
    private var value: T?

    init(
        store: SQLiteIdentityStore, body: @escaping @Sendable (any IdentityWriteContext) throws -> T,
        completion: @escaping @Sendable (Result<T, any Error>) -> Void, handBack: LoopIteration.HandBack?
    ) {
        self.store = store
        self.body = body
        self.completion = completion
        self.handBack = handBack
    }

    func markAuthChanged() { authChanged.store(true, ordering: .relaxed) }

    func run(_ db: Database) throws { value = try body(store.writeContext(db, authChanges: self)) }

    func complete(_ error: (any Error)?) {
        if authChanged.load(ordering: .relaxed) { store.announceAuthChange() }
        completion(
            WriterJobResult.of(value, error).mapError { error in
                (error as? SQLiteError).map(SQLiteIdentityStore.domainError) ?? error
            })
    }
}

/// The handlers of ``SQLiteIdentityStore/onAuthenticationChange(_:)``.
private final class AuthObservers: Sendable {
    private let handlers = Mutex<[@Sendable () -> Void]>([])
    func add(_ handler: @escaping @Sendable () -> Void) { handlers.withLock { $0.append(handler) } }
    func notify() {
        for handler in handlers.withLock({ $0 }) { handler() }
    }
}

private func fileSize(_ path: String) -> Int {
    var info = stat()
    return stat(path, &info) == 0 ? Int(info.st_size) : 0
}

/// `7` → `0007`, as migration files are numbered.
private func zeroPadded(_ value: Int) -> String {
    let digits = String(value)
    return String(repeating: "0", count: max(0, 4 - digits.count)) + digits
}

/// Works off the events of retired subscribers a chunk at a time, one small job per write group,
/// until none is left: an absorbed subscriber's 10,000 events are moved to the person that absorbed
/// it (or deleted, when that person was erased) over ~40 groups instead of inside the merge's.
final class RetiredPurge: Sendable {
    /// Events per job: small enough that the group carrying it barely notices. Moving 1,000 (an
    /// insert and a delete each) held its group ~8 ms, and others' identify p99 beside a
    /// 10,000-event absorb read 18.0-22.0 ms against 13.3-15.9 ms with no absorb; at 250 it read
    /// 15.9-18.1 ms, the move taking ~380 ms instead of ~220 ms (bench/README.md).
    static let chunk = 250

    private let writer: DatabaseWriter
    private let chain = JobChain()

    init(writer: DatabaseWriter) { self.writer = writer }

    /// Makes sure a purge job runs after this point; cheap to call from a job on the writer
    /// thread (it only queues).
    @Sendable func request() {
        if chain.request() { submit() }
    }

    private func submit() {
        writer.submit({ db in try SQLiteContext(db: db).purgeRetired(limit: Self.chunk) }) { [self] result in
            // An error (closing, disk full) stops the chain; the next retire or start-up resumes it.
            guard case .success(let worked) = result else { return chain.failed() }
            if chain.finished(didWork: worked) { submit() }
        }
    }
}

import API
import Identity
import JSON
import PostgresStorage
import SQLite
import Storage
import Threads

/// A store as `serve` and the other commands use it: reads, writes and a lifecycle.
typealias ServedStore = any IdentityStore & StoreLifecycle

/// Which engine a `--database` value names: the one place that decides (API.md §12).
enum DatabaseLocation {
    /// A SQLite file path (the embedded default).
    case sqlite(path: String)
    /// A `postgres://` or `postgresql://` URL.
    case postgres(url: String)

    init(_ value: String) {
        self = PostgresIdentityStore.handles(value) ? .postgres(url: value) : .sqlite(path: value)
    }
}

/// Opens the store `settings.database` names, migrating it first.
/// - Parameter metrics: receives SQLite's group-commit figures.
func openStore(_ settings: Settings, metrics: Metrics? = nil) throws -> ServedStore {
    switch DatabaseLocation(settings.database) {
    case .sqlite(let path):
        try createParentDirectory(of: path)
        var configuration = SQLiteIdentityStore.Configuration(path: path)
        configuration.readerCount = settings.readerConnections
        configuration.snapshotCacheBytes = settings.snapshotCacheMiB << 20
        configuration.synchronous = settings.synchronousFull ? .full : .normal
        let logger = Logger(level: settings.logLevel)
        return try SQLiteIdentityStore(
            configuration: configuration,
            onCommit: { size, duration in metrics?.recordCommit(batchSize: size, duration: duration) },
            onSync: { duration in metrics?.recordLogSync(duration: duration) },
            onLogRestart: { duration in metrics?.recordLogRestart(duration: duration) },
            onError: { operation, error in
                // What no request saw (a checkpoint, a PRAGMA, a skipped setting) still reaches the log.
                metrics?.recordStorageError(operation: operation)
                logger.log(.error, "storage error", ["operation": .string(operation), "error": .string("\(error)")])
            })
    case .postgres(let url):
        var configuration = PostgresIdentityStore.Configuration(url: url)
        configuration.poolSize = settings.postgresPoolSize
        configuration.writerThreads = settings.postgresWriterThreads
        configuration.snapshotCacheBytes = settings.snapshotCacheMiB << 20
        let logger = Logger(level: settings.logLevel)
        return try PostgresIdentityStore(configuration: configuration) { operation, error in
            metrics?.recordStorageError(operation: operation)
            logger.log(.error, "storage error", ["operation": .string(operation), "error": .string("\(error)")])
        }
    }
}

/// The one-server-per-file lock of a SQLite database (nil on PostgreSQL, which any number of
/// servers share); `serve` holds it for its life, `migrate` while it changes the schema.
func serverLock(_ settings: Settings) throws -> ServerLock? {
    guard case .sqlite(let path) = DatabaseLocation(settings.database) else { return nil }
    try createParentDirectory(of: path)
    return try ServerLock(databasePath: path)
}

/// Applies pending migrations; returns the names applied.
func migrateStore(_ settings: Settings) throws -> [String] {
    switch DatabaseLocation(settings.database) {
    case .sqlite(let path):
        try createParentDirectory(of: path)
        return try SQLiteIdentityStore.migrate(path: path)
    case .postgres(let url):
        return try PostgresIdentityStore.migrate(url: url)
    }
}

/// Runs one write and waits for it to commit (the CLI has nothing else to do meanwhile).
func writeAndWait<T: Sendable>(
    _ store: any IdentityStore, _ body: @escaping @Sendable (any IdentityWriteContext) throws -> T
) throws -> T {
    // The outcome is handed over under the lock, so no unchecked shared variable is needed.
    let outcome = ConditionLock<Result<T, any Error>?>(nil)
    store.write(body) { result in
        outcome.withLock { $0 = result }
        outcome.broadcast()
    }
    return try outcome.withLock(waitingUntil: { $0 != nil }) { $0! }.get()
}

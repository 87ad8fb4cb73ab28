import API
import Dispatch
import Identity
import PostgresStorage
import SQLite
import Storage

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
        return try SQLiteIdentityStore(configuration: configuration) { size, duration in
            metrics?.recordCommit(batchSize: size, duration: duration)
        }
    case .postgres(let url):
        var configuration = PostgresIdentityStore.Configuration(url: url)
        configuration.poolSize = settings.postgresPoolSize
        configuration.writerThreads = settings.postgresWriterThreads
        return try PostgresIdentityStore(configuration: configuration)
    }
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
    let done = DispatchSemaphore(value: 0)
    nonisolated(unsafe) var outcome: Result<T, any Error>?
    store.write(body) { result in
        outcome = result
        done.signal()
    }
    done.wait()
    return try outcome!.get()
}

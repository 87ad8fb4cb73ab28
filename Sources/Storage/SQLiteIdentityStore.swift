import Identity
import SQLite

/// `IdentityStore` on SQLite in WAL mode: one writer thread committing in groups, and a pool of
/// reader connections that never wait for it.
package final class SQLiteIdentityStore: IdentityStore {
    /// Where the database lives and how it is opened.
    package struct Configuration: Sendable {
        package var path: String
        package var readerCount = 4
        package var synchronous: Database.Options.Synchronous = .full
        package var busyTimeout: Duration = .seconds(5)
        package var maxWriteBatch = 256
        package init(path: String) { self.path = path }
    }

    package let writer: DatabaseWriter
    private let readers: DatabaseReaderPool

    /// Opens the database, applies pending migrations, and starts the writer.
    /// - Parameter onCommit: observes each group commit (batch size, duration) for metrics.
    package init(
        configuration: Configuration,
        onCommit: (@Sendable (_ batchSize: Int, _ commitDuration: Duration) -> Void)? = nil
    ) throws {
        var options = Database.Options()
        options.synchronous = configuration.synchronous
        options.busyTimeout = configuration.busyTimeout
        try Self.migrate(path: configuration.path, options: options)
        writer = try DatabaseWriter(
            path: configuration.path, options: options, maxBatch: configuration.maxWriteBatch, onCommit: onCommit)
        var readOptions = options
        readOptions.readOnly = true
        readers = try DatabaseReaderPool(
            path: configuration.path, count: configuration.readerCount, options: readOptions)
    }

    /// Applies the embedded migrations that this database has not seen.
    /// - Returns: the file names applied.
    @discardableResult
    package static func migrate(path: String, options: Database.Options = .init()) throws -> [String] {
        let db = try Database(path: path, options: options)
        defer { db.close() }
        return try Migrator(migrations: bundledMigrations()).migrate(db).map { "\(zeroPadded($0.version))_\($0.name)" }
    }

    /// The migrations compiled into this binary from the top-level `migrations/` folder.
    package static func bundledMigrations() throws -> [Migration] {
        try embeddedMigrations.map { try Migration(fileName: $0.fileName, sql: $0.contents) }
    }

    package func read<T>(_ body: (any IdentityReadContext) throws -> T) throws -> T {
        do {
            return try readers.read { db in try body(SQLiteContext(db: db)) }
        } catch let error as SQLiteError {
            throw Self.domainError(error)
        }
    }

    package func write<T: Sendable>(
        _ body: @escaping @Sendable (any IdentityWriteContext) throws -> T,
        completion: @escaping @Sendable (Result<T, any Error>) -> Void
    ) {
        writer.submit({ db in try body(SQLiteContext(db: db)) }) { result in
            completion(result.mapError { error in (error as? SQLiteError).map(Self.domainError) ?? error })
        }
    }

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
        return IdentityError(code: "unavailable", message: reason)
    }

    /// Blocking write, for the CLI and tests.
    package func write<T: Sendable>(_ body: @escaping @Sendable (any IdentityWriteContext) throws -> T) throws -> T {
        try writer.write { db in try body(SQLiteContext(db: db)) }
    }

    /// Drains queued writes, checkpoints and closes every connection.
    /// Readers close first: SQLite checkpoints and deletes the WAL only when the last connection
    /// to close can write, and the readers are read-only.
    package func close() {
        readers.close()
        writer.close()
    }
}

/// `7` → `0007`, as migration files are numbered.
private func zeroPadded(_ value: Int) -> String {
    let digits = String(value)
    return String(repeating: "0", count: max(0, 4 - digits.count)) + digits
}

import Foundation
import Identity
import PostgresStorage
import Storage

/// The stores a test runs on: SQLite always, PostgreSQL too when `BUZZKIT_TEST_POSTGRES_URL`
/// names a test server. Use as `@Test(arguments: StoreKind.available)`.
package enum StoreKind: String, Sendable, CaseIterable, CustomStringConvertible {
    case sqlite
    case postgres

    /// SQLite, and PostgreSQL when a test server is configured.
    package static var available: [StoreKind] {
        PostgresTestDatabase.isAvailable ? [.sqlite, .postgres] : [.sqlite]
    }

    package var description: String { rawValue }
}

/// A store of either kind on a fresh database, and what has to be cleaned up with it.
package final class TestStore: @unchecked Sendable {
    /// The store.
    package let store: any IdentityStore & StoreLifecycle
    /// The `--database` value that reaches the same database (a file path or a URL).
    package let database: String
    private let postgres: PostgresTestDatabase?
    private let directory: URL?

    /// Opens a store on a new, migrated database.
    /// - Parameters:
    ///   - kind: The engine.
    ///   - sqliteReaders: Reader connections of a SQLite store.
    ///   - postgresWriterThreads: Writer threads of a PostgreSQL store (the store's default if nil).
    package init(_ kind: StoreKind, sqliteReaders: Int = 2, postgresWriterThreads: Int? = nil) throws {
        switch kind {
        case .sqlite:
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
                "buzzkit-store-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            database = directory.appendingPathComponent("db.sqlite").path
            var configuration = SQLiteIdentityStore.Configuration(path: database)
            configuration.readerCount = sqliteReaders
            store = try SQLiteIdentityStore(configuration: configuration)
            self.directory = directory
            postgres = nil
        case .postgres:
            guard let created = try PostgresTestDatabase.make() else {
                throw TestFailure("BUZZKIT_TEST_POSTGRES_URL is not set")
            }
            var configuration = PostgresIdentityStore.Configuration(url: created.url)
            configuration.poolSize = 4
            configuration.usageFlushInterval = .milliseconds(200)
            if let postgresWriterThreads { configuration.writerThreads = postgresWriterThreads }
            let store = try PostgresIdentityStore(configuration: configuration)
            // The listener for other servers' auth changes and the usage flush, as `serve` runs them.
            try store.startMaintenance()
            self.store = store
            database = created.url
            postgres = created
            directory = nil
        }
    }

    /// A second PostgreSQL store on the database of `other`, as a second server would open it;
    /// the database stays `other`'s to drop.
    package init(sharing other: TestStore) throws {
        guard other.postgres != nil else { throw TestFailure("only a PostgreSQL database can be shared") }
        var configuration = PostgresIdentityStore.Configuration(url: other.database)
        configuration.poolSize = 4
        configuration.usageFlushInterval = .milliseconds(200)
        let store = try PostgresIdentityStore(configuration: configuration)
        try store.startMaintenance()
        self.store = store
        database = other.database
        postgres = nil
        directory = nil
    }

    /// Closes the store and removes its database.
    package func close() {
        store.close()
        postgres?.drop()
        if let directory { try? FileManager.default.removeItem(at: directory) }
    }
}

extension IdentityStore {
    /// Runs one write and waits for it: tests and fixtures have nothing else to do meanwhile.
    package func writeAndWait<T: Sendable>(_ body: @escaping @Sendable (any IdentityWriteContext) throws -> T)
        throws -> T
    {
        let done = DispatchSemaphore(value: 0)
        let box = ResultBox<T>()
        write(body) { result in
            box.result = result
            done.signal()
        }
        done.wait()
        return try box.result!.get()
    }
}

/// Carries a write's result from the writer's thread to the waiting one (the semaphore orders them).
private final class ResultBox<T>: @unchecked Sendable {
    var result: Result<T, any Error>?
}

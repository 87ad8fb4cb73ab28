import Migrations

// MARK: - Migrator

/// Applies numbered SQL migrations in order, each in its own transaction together with its row
/// in the `schema_migrations` ledger, while holding a session advisory lock: servers that start
/// together on an empty database queue on the lock, and each migration runs once.
///
/// PostgreSQL DDL is transactional, so a migration that fails leaves nothing behind, and
/// foreign keys are checked as each statement runs (there is no deferred check to make).
///
/// ```swift
/// let applied = try Migrator(migrations: migrations).migrate(connection)
/// ```
package struct Migrator: Sendable {
    /// The key of the advisory lock (`pg_advisory_lock(bigint)`), shared by every buzzkit:
    /// the ASCII of "buzzkit" as a number.
    package static let lockKey: Int64 = 0x62_757a_7a6b_6974

    /// The known migrations, ascending by version.
    package let migrations: [Migration]

    /// The ledger: one row per applied migration.
    static let ledgerSQL = """
        CREATE TABLE IF NOT EXISTS schema_migrations (
            version integer PRIMARY KEY,
            name text NOT NULL,
            checksum text NOT NULL,
            applied_at timestamptz NOT NULL DEFAULT now()
        )
        """

    /// Sorts the migrations by version.
    /// - Throws: ``MigrationError`` (`.duplicateVersion`) when two share a version.
    package init(migrations: [Migration]) throws {
        self.migrations = try sortedByVersion(migrations)
    }

    /// The migrations not yet applied, after checking the ledger against this binary. Reads only.
    /// - Throws: ``MigrationError`` when the ledger disagrees (edited, unknown, out of order).
    package func pending(_ connection: Connection) throws -> [Migration] {
        let exists = try connection.queryOne("SELECT to_regclass('schema_migrations') IS NOT NULL")!.bool(0)
        guard exists else { return migrations }
        return try pendingMigrations(migrations, applied: appliedRows(connection))
    }

    /// Applies every pending migration, in version order, under the advisory lock.
    ///
    /// The ledger is read again once the lock is held: a server that waited while another
    /// migrated finds nothing left to do. A migration that fails is rolled back whole; the
    /// ones before it stay applied.
    /// - Returns: The migrations applied by this call (empty when up to date).
    /// - Throws: ``MigrationError``, or ``PostgresError`` when the connection fails.
    package func migrate(_ connection: Connection) throws -> [Migration] {
        _ = try connection.query("SELECT pg_advisory_lock($1)", [Self.lockKey])
        defer { _ = try? connection.query("SELECT pg_advisory_unlock($1)", [Self.lockKey]) }
        try connection.execute(Self.ledgerSQL)
        var applied: [Migration] = []
        for migration in try pendingMigrations(migrations, applied: appliedRows(connection)) {
            try connection.transaction {
                do {
                    try connection.execute(migration.sql)
                } catch {
                    throw MigrationError(.failed, "migration \(migration.identifier) failed", underlying: error)
                }
                try connection.execute(
                    "INSERT INTO schema_migrations(version, name, checksum) VALUES ($1, $2, $3)",
                    [migration.version, migration.name, migration.checksum])
            }
            applied.append(migration)
        }
        return applied
    }

    /// Every ledger row, ascending by version.
    private func appliedRows(_ connection: Connection) throws -> [AppliedMigration] {
        try connection.query("SELECT version, name, checksum FROM schema_migrations ORDER BY version").map {
            AppliedMigration(version: Int(try $0.int(0)), name: try $0.string(1), checksum: try $0.string(2))
        }
    }
}

import Migrations

// MARK: - Migrator

/// Applies numbered SQL migrations in order, each in its own `IMMEDIATE` transaction together
/// with its row in the `schema_migrations` ledger; foreign keys are checked before each commit.
///
/// ```swift
/// let migrator = try Migrator(migrations: embeddedMigrations.map { try Migration(fileName: $0.fileName, sql: $0.sql) })
/// let applied = try migrator.migrate(db)
/// ```
package struct Migrator: Sendable {
    /// The known migrations, ascending by version.
    package let migrations: [Migration]

    /// The ledger: one row per applied migration.
    static let ledgerSQL = """
        CREATE TABLE IF NOT EXISTS schema_migrations (
            version INTEGER PRIMARY KEY,
            name TEXT NOT NULL,
            checksum TEXT NOT NULL,
            applied_at TEXT NOT NULL
        )
        """

    /// Sorts the migrations by version.
    /// - Parameter migrations: In any order.
    /// - Throws: ``MigrationError`` (`.duplicateVersion`) when two share a version.
    package init(migrations: [Migration]) throws {
        self.migrations = try sortedByVersion(migrations)
    }

    /// The migrations not yet applied, after checking the ledger against this binary.
    ///
    /// Reads only: does not create the ledger table.
    /// - Throws: ``MigrationError`` when the ledger disagrees (edited, unknown, out of order).
    package func pending(_ db: Database) throws -> [Migration] {
        guard try db.hasTable("schema_migrations") else { return migrations }
        return try pendingMigrations(migrations, applied: appliedRows(db))
    }

    /// Applies every pending migration, in version order.
    ///
    /// Each runs with `foreign_keys` off (so table rebuilds do not cascade, per
    /// <https://www.sqlite.org/lang_altertable.html#otheralter>) inside `BEGIN IMMEDIATE`;
    /// `PRAGMA foreign_key_check` must then return nothing before the ledger row and the
    /// migration commit together. A migration that fails is rolled back whole; the ones
    /// before it stay applied.
    /// - Returns: The migrations applied by this call (empty when up to date).
    /// - Throws: ``MigrationError``.
    package func migrate(_ db: Database) throws -> [Migration] {
        try db.execute(Self.ledgerSQL)
        let foreignKeysWereOn = try db.queryOne("PRAGMA foreign_keys")?.bool(0) ?? false
        if foreignKeysWereOn { try db.execute("PRAGMA foreign_keys = OFF") }
        defer { if foreignKeysWereOn { try? db.execute("PRAGMA foreign_keys = ON") } }

        var applied: [Migration] = []
        for migration in try pendingMigrations(migrations, applied: appliedRows(db)) {
            let didApply = try db.transaction(.immediate) { () throws -> Bool in
                // Another process may have applied it since we looked; the lock is ours now.
                if let row = try db.queryOne(
                    "SELECT checksum FROM schema_migrations WHERE version = ?", [migration.version])
                {
                    guard row.string(0) == migration.checksum else { throw MigrationError.edited(migration) }
                    return false
                }
                do {
                    try db.execute(migration.sql)
                } catch {
                    throw MigrationError(.failed, "migration \(migration.identifier) failed", underlying: error)
                }
                let violations = try db.query("PRAGMA foreign_key_check")
                if let first = violations.first {
                    let table = first.string(0) ?? "?"
                    let rowid = first.int(1).map(String.init) ?? "?"
                    let parent = first.string(2) ?? "?"
                    throw MigrationError(
                        .foreignKeyViolation,
                        "migration \(migration.identifier) leaves \(violations.count) foreign key violation(s), "
                            + "first: \(table) rowid \(rowid) references a missing row of \(parent)")
                }
                try db.execute(
                    """
                    INSERT INTO schema_migrations(version, name, checksum, applied_at)
                    VALUES (?, ?, ?, strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
                    """,
                    [migration.version, migration.name, migration.checksum])
                return true
            }
            if didApply { applied.append(migration) }
        }
        return applied
    }

    /// Every ledger row, ascending by version.
    private func appliedRows(_ db: Database) throws -> [AppliedMigration] {
        try db.query("SELECT version, name, checksum FROM schema_migrations ORDER BY version").map {
            AppliedMigration(version: Int($0.int(0) ?? 0), name: $0.string(1) ?? "", checksum: $0.string(2) ?? "")
        }
    }
}

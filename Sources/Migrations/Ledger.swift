// The engine-neutral half of migrating: comparing this binary's migrations with a database's
// `schema_migrations` ledger. Each engine's `Migrator` reads the ledger and runs the SQL.

/// One row of a database's `schema_migrations` ledger: a migration it has applied.
package struct AppliedMigration: Sendable, Hashable {
    /// The migration's version.
    package var version: Int
    /// The name it had when applied.
    package var name: String
    /// The checksum of the SQL that was applied.
    package var checksum: String

    /// Creates a ledger row from its columns.
    package init(version: Int, name: String, checksum: String) {
        self.version = version
        self.name = name
        self.checksum = checksum
    }
}

/// The migrations ascending by version, checked for duplicate versions.
/// - Parameter migrations: In any order.
/// - Throws: ``MigrationError`` (`.duplicateVersion`) when two share a version.
package func sortedByVersion(_ migrations: [Migration]) throws -> [Migration] {
    let sorted = migrations.sorted { $0.version < $1.version }
    for (previous, next) in zip(sorted, sorted.dropFirst()) where previous.version == next.version {
        throw MigrationError(
            .duplicateVersion,
            "migrations \(previous.identifier) and \(next.identifier) have the same version \(next.version)")
    }
    return sorted
}

/// The migrations still to apply, in version order, after checking the ledger against them.
///
/// ```swift
/// let todo = try pendingMigrations(migrations, applied: rows)  // rows read from schema_migrations
/// ```
/// - Parameters:
///   - migrations: This binary's migrations, in any order.
///   - applied: The ledger rows, in any order.
/// - Throws: ``MigrationError``: `.duplicateVersion`, `.unknownVersion` (the database is newer
///   than the binary), `.edited` (an applied migration was changed or renamed), `.outOfOrder`
///   (a pending migration is numbered below an applied one).
package func pendingMigrations(_ migrations: [Migration], applied: [AppliedMigration]) throws -> [Migration] {
    let migrations = try sortedByVersion(migrations)
    let applied = applied.sorted { $0.version < $1.version }
    let known = Dictionary(uniqueKeysWithValues: migrations.map { ($0.version, $0) })
    let unknown = applied.filter { known[$0.version] == nil }
    if !unknown.isEmpty {
        let names = unknown.map { Migration(version: $0.version, name: $0.name, sql: "").identifier }
        throw MigrationError(
            .unknownVersion,
            "database is newer than this binary: it has migration(s) \(names.joined(separator: ", ")) "
                + "that this binary does not know; run a newer buzzkit")
    }
    for row in applied {
        // Every row is known: the unknown ones threw above.
        let migration = known[row.version]!
        if migration.checksum != row.checksum || migration.name != row.name {
            throw MigrationError.edited(migration, appliedName: row.name)
        }
    }
    let appliedVersions = Set(applied.map(\.version))
    let pending = migrations.filter { !appliedVersions.contains($0.version) }
    if let newest = applied.last, let early = pending.first, early.version < newest.version {
        throw MigrationError(
            .outOfOrder,
            "migration \(early.identifier) is numbered below the already applied "
                + "\(known[newest.version]!.identifier); renumber it after the newest")
    }
    return pending
}

extension MigrationError {
    /// The `.edited` error for an applied migration whose SQL or name no longer matches.
    /// - Parameters:
    ///   - migration: This binary's migration.
    ///   - appliedName: The name in the ledger; when it differs, the message says "renamed".
    package static func edited(_ migration: Migration, appliedName: String? = nil) -> MigrationError {
        if let appliedName, appliedName != migration.name {
            let applied = Migration(version: migration.version, name: appliedName, sql: "").identifier
            return MigrationError(
                .edited, "migration \(applied) was renamed to \(migration.identifier) after it was applied")
        }
        return MigrationError(
            .edited,
            "migration \(migration.identifier) was edited after it was applied; "
                + "restore it and put the change in a new migration")
    }
}

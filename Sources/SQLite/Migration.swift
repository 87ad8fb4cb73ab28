// MARK: - Migration

/// One numbered SQL file from `migrations/`, e.g. `0001_initial.sql`. Never edited once shipped:
/// ``Migrator`` refuses a database where an applied migration's checksum differs.
package struct Migration: Sendable, Hashable {
    /// The number before the first `_` (`1` for `0001_initial.sql`); the order of application.
    package var version: Int
    /// The text between the number and `.sql` (`initial`).
    package var name: String
    /// The SQL script, run as is in one transaction.
    package var sql: String
    /// 64-bit FNV-1a of the exact UTF-8 bytes of ``sql``, as 16 lowercase hex digits.
    ///
    /// Not cryptographic (none is needed: it detects accidental edits, not attacks) and
    /// computed without a crypto library. Any byte change, including line endings, changes it.
    package var checksum: String

    /// `0001_initial`: the file name without `.sql`, as used in messages.
    package var identifier: String {
        let digits = String(version)
        return String(repeating: "0", count: max(0, 4 - digits.count)) + digits + "_" + name
    }

    /// Parses a migration file name and computes the checksum.
    ///
    /// ```swift
    /// let migration = try Migration(fileName: "0001_initial.sql", sql: text)  // version 1, "initial"
    /// ```
    /// - Parameters:
    ///   - fileName: `NNNN_name.sql`: digits, `_`, a name of letters, digits, `_` or `-`; a
    ///     leading directory is ignored.
    ///   - sql: The file's content.
    /// - Throws: ``MigrationError`` when the name does not follow the pattern or the version is 0.
    package init(fileName: String, sql: String) throws {
        let baseName =
            fileName.split(separator: "/", omittingEmptySubsequences: false).last.map(String.init) ?? fileName
        guard baseName.hasSuffix(".sql") else {
            throw MigrationError(.invalidFileName, "migration file name \"\(fileName)\" does not end in .sql")
        }
        let stem = baseName.dropLast(4)
        guard let underscore = stem.firstIndex(of: "_") else {
            throw MigrationError(.invalidFileName, "migration file name \"\(fileName)\" is not NNNN_name.sql")
        }
        let digits = stem[..<underscore]
        let name = stem[stem.index(after: underscore)...]
        let nameIsValid =
            !name.isEmpty
            && name.unicodeScalars.allSatisfy {
                (("0"..."9").contains($0) || ("a"..."z").contains($0) || ("A"..."Z").contains($0)
                    || $0 == "_" || $0 == "-")
            }
        guard !digits.isEmpty, digits.allSatisfy(\.isASCII), let version = Int(digits), version > 0, nameIsValid
        else {
            throw MigrationError(
                .invalidFileName,
                "migration file name \"\(fileName)\" is not NNNN_name.sql (a version > 0, then a name of letters, digits, _ or -)"
            )
        }
        self.init(version: version, name: String(name), sql: sql)
    }

    /// Creates a migration from its parts.
    /// - Parameters:
    ///   - version: A positive number.
    ///   - name: A short name.
    ///   - sql: The SQL script.
    package init(version: Int, name: String, sql: String) {
        self.version = version
        self.name = name
        self.sql = sql
        self.checksum = Migration.checksum(of: sql)
    }

    /// 64-bit FNV-1a (<http://www.isthe.com/chongo/tech/comp/fnv/>) of the UTF-8 bytes, hex.
    package static func checksum(of text: String) -> String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in text.utf8 {
            hash ^= UInt64(byte)
            hash = hash &* 0x0000_0100_0000_01B3
        }
        let hex = String(hash, radix: 16)
        return String(repeating: "0", count: 16 - hex.count) + hex
    }
}

// MARK: - Errors

/// Why migrating failed; `description` says which migration and what to do.
package struct MigrationError: Error, CustomStringConvertible {
    /// A stable category, for tests and callers that branch on it.
    package struct Kind: Sendable, Hashable, CustomStringConvertible {
        private enum Value: String, Sendable, Hashable {
            case invalidFileName, duplicateVersion, edited, unknownVersion, outOfOrder, failed, foreignKeyViolation
        }
        private let value: Value
        private init(_ value: Value) { self.value = value }

        /// A file name that is not `NNNN_name.sql`.
        package static let invalidFileName = Kind(.invalidFileName)
        /// Two migrations share a version number.
        package static let duplicateVersion = Kind(.duplicateVersion)
        /// An applied migration's checksum or name differs from this binary's.
        package static let edited = Kind(.edited)
        /// The database has versions this binary does not know: it is newer than the binary.
        package static let unknownVersion = Kind(.unknownVersion)
        /// A pending migration is numbered below one already applied.
        package static let outOfOrder = Kind(.outOfOrder)
        /// The migration's SQL failed; see ``MigrationError/underlying``.
        package static let failed = Kind(.failed)
        /// The migration left rows violating foreign keys (`PRAGMA foreign_key_check`).
        package static let foreignKeyViolation = Kind(.foreignKeyViolation)

        /// The category name.
        package var description: String { value.rawValue }
    }

    /// The category.
    package var kind: Kind
    /// The human-readable explanation, naming the migration file.
    package var message: String
    /// The SQLite error behind a `.failed` migration.
    package var underlying: (any Error)?

    init(_ kind: Kind, _ message: String, underlying: (any Error)? = nil) {
        self.kind = kind
        self.message = message
        self.underlying = underlying
    }

    /// The message, followed by the underlying error if any.
    package var description: String {
        guard let underlying else { return message }
        return "\(message): \(underlying)"
    }
}

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
        let sorted = migrations.sorted { $0.version < $1.version }
        for (previous, next) in zip(sorted, sorted.dropFirst()) where previous.version == next.version {
            throw MigrationError(
                .duplicateVersion,
                "migrations \(previous.identifier) and \(next.identifier) have the same version \(next.version)")
        }
        self.migrations = sorted
    }

    /// The migrations not yet applied, after checking the ledger against this binary.
    ///
    /// Reads only: does not create the ledger table.
    /// - Throws: ``MigrationError`` when the ledger disagrees (edited, unknown, out of order).
    package func pending(_ db: Database) throws -> [Migration] {
        let ledgerExists =
            try db.queryOne(
                "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'") != nil
        guard ledgerExists else { return migrations }
        return try pending(applied: appliedRows(db))
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
        for migration in try pending(applied: appliedRows(db)) {
            let didApply = try db.transaction(.immediate) { () throws -> Bool in
                // Another process may have applied it since we looked; the lock is ours now.
                if let row = try db.queryOne(
                    "SELECT checksum FROM schema_migrations WHERE version = ?", [migration.version])
                {
                    guard row.string(0) == migration.checksum else { throw editedError(migration) }
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

    /// (version, name, checksum) of every ledger row, ascending.
    private func appliedRows(_ db: Database) throws -> [(version: Int, name: String, checksum: String)] {
        try db.query("SELECT version, name, checksum FROM schema_migrations ORDER BY version").map {
            (Int($0.int(0) ?? 0), $0.string(1) ?? "", $0.string(2) ?? "")
        }
    }

    private func pending(applied: [(version: Int, name: String, checksum: String)]) throws -> [Migration] {
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
            let migration = known[row.version]!
            if migration.checksum != row.checksum || migration.name != row.name {
                throw editedError(migration, appliedName: row.name)
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

    private func editedError(_ migration: Migration, appliedName: String? = nil) -> MigrationError {
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

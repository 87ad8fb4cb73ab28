// MARK: - Migration

/// One numbered SQL file from `migrations/postgres/`, e.g. `0001_initial.sql`. Never edited
/// once shipped: ``Migrator`` refuses a database where an applied migration's checksum differs.
/// The same rules as the SQLite module's migrations, on the other engine.
package struct Migration: Sendable, Hashable {
    /// The number before the first `_`: the order of application.
    package var version: Int
    /// The text between the number and `.sql`.
    package var name: String
    /// The SQL script, run as is in one transaction.
    package var sql: String
    /// 64-bit FNV-1a of the exact UTF-8 bytes of ``sql``, as 16 lowercase hex digits: detects
    /// accidental edits (not attacks, so no cryptographic hash is needed).
    package var checksum: String

    /// `0001_initial`: the file name without `.sql`, as used in messages.
    package var identifier: String {
        let digits = String(version)
        return String(repeating: "0", count: max(0, 4 - digits.count)) + digits + "_" + name
    }

    /// Parses `NNNN_name.sql` (a leading directory is ignored) and computes the checksum.
    /// - Throws: ``MigrationError`` (`.invalidFileName`).
    package init(fileName: String, sql: String) throws {
        let baseName = fileName.split(separator: "/").last.map(String.init) ?? fileName
        let stem = baseName.hasSuffix(".sql") ? baseName.dropLast(4) : ""
        let underscore = stem.firstIndex(of: "_")
        let digits = underscore.map { stem[..<$0] } ?? ""
        let name = underscore.map { stem[stem.index(after: $0)...] } ?? ""
        let nameIsValid =
            !name.isEmpty
            && name.unicodeScalars.allSatisfy {
                $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0) || $0 == "_" || $0 == "-")
            }
        guard !digits.isEmpty, digits.allSatisfy(\.isASCII), let version = Int(digits), version > 0, nameIsValid
        else {
            throw MigrationError(.invalidFileName, "migration file name \"\(fileName)\" is not NNNN_name.sql")
        }
        self.init(version: version, name: String(name), sql: sql)
    }

    /// Creates a migration from its parts.
    package init(version: Int, name: String, sql: String) {
        self.version = version
        self.name = name
        self.sql = sql
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in sql.utf8 {
            hash ^= UInt64(byte)
            hash = hash &* 0x0000_0100_0000_01B3
        }
        let hex = String(hash, radix: 16)
        self.checksum = String(repeating: "0", count: 16 - hex.count) + hex
    }
}

// MARK: - Errors

/// Why migrating failed; `description` says which migration and what to do.
package struct MigrationError: Error, CustomStringConvertible {
    /// A stable category, for tests and callers that branch on it.
    package struct Kind: Sendable, Hashable, CustomStringConvertible {
        private enum Value: String, Sendable, Hashable {
            case invalidFileName, duplicateVersion, edited, unknownVersion, outOfOrder, failed
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

        /// The category name.
        package var description: String { value.rawValue }
    }

    /// The category.
    package var kind: Kind
    /// The explanation, naming the migration file.
    package var message: String
    /// The ``PostgresError`` behind a `.failed` migration.
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
        let sorted = migrations.sorted { $0.version < $1.version }
        for (previous, next) in zip(sorted, sorted.dropFirst()) where previous.version == next.version {
            throw MigrationError(
                .duplicateVersion,
                "migrations \(previous.identifier) and \(next.identifier) have the same version \(next.version)")
        }
        self.migrations = sorted
    }

    /// The migrations not yet applied, after checking the ledger against this binary. Reads only.
    /// - Throws: ``MigrationError`` when the ledger disagrees (edited, unknown, out of order).
    package func pending(_ connection: Connection) throws -> [Migration] {
        let exists = try connection.queryOne("SELECT to_regclass('schema_migrations') IS NOT NULL")!.bool(0)
        guard exists else { return migrations }
        return try pending(applied: appliedRows(connection))
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
        for migration in try pending(applied: appliedRows(connection)) {
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

    /// (version, name, checksum) of every ledger row, ascending.
    private func appliedRows(_ connection: Connection) throws -> [(version: Int, name: String, checksum: String)] {
        try connection.query("SELECT version, name, checksum FROM schema_migrations ORDER BY version").map {
            (Int(try $0.int(0)), try $0.string(1), try $0.string(2))
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
            if migration.name != row.name {
                let old = Migration(version: row.version, name: row.name, sql: "").identifier
                throw MigrationError(
                    .edited, "migration \(old) was renamed to \(migration.identifier) after it was applied")
            }
            if migration.checksum != row.checksum {
                throw MigrationError(
                    .edited,
                    "migration \(migration.identifier) was edited after it was applied; "
                        + "restore it and put the change in a new migration")
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
}

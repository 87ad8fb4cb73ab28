import Glibc
import Migrations
import SQLite

// MARK: - Source

/// Reads a SQLite store for `buzzkit copy`, in one deferred read transaction: in WAL mode it
/// pins one snapshot and never blocks the server that may be writing the file meanwhile
/// (<https://www.sqlite.org/wal.html#concurrency>).
package final class SQLiteCopySource: CopySource {
    private let db: Database

    /// Opens `path` read-only.
    /// - Parameters:
    ///   - path: An existing database file.
    ///   - migrations: This binary's migrations: a source behind them is refused, since the
    ///     plan reads today's columns.
    package init(path: String, migrations: [Migration]) throws {
        guard access(path, F_OK) == 0 else { throw StoreCopyError("no database at \(path)") }
        var options = Database.Options()
        options.readOnly = true
        db = try Database(path: path, options: options)
        let pending = try Migrator(migrations: migrations).pending(db)
        guard pending.isEmpty else {
            db.close()
            throw StoreCopyError(
                "the source \(path) lacks migration(s) \(pending.map(\.identifier).joined(separator: ", ")); "
                    + "run `buzzkit migrate --database \(path)` first")
        }
    }

    package func begin() throws {
        try db.execute("BEGIN DEFERRED TRANSACTION")
        // A deferred transaction takes its snapshot at the first read: read now, so counts and
        // rows all come from this moment.
        _ = try db.queryOne("SELECT count(*) FROM schema_migrations")
        // An absorb's events still moving (migration 0006) sit on a retired subscriber, which
        // the plan skips: the copy would lose them. `buzzkit copy` finishes the moves before it
        // opens this snapshot; one started by a server in between is refused, not half copied.
        if try db.hasTable("event_moves"), let pending = try db.queryOne("SELECT count(*) FROM event_moves")?.int(0),
            pending > 0
        {
            throw StoreCopyError(
                "\(pending) absorbed subscriber(s) of the source still have events moving to their person; "
                    + "run the copy again (it finishes them first)")
        }
    }

    package func hasTable(_ table: CopyTable) throws -> Bool {
        try db.hasTable(table.name)
    }

    package func count(_ table: CopyTable) throws -> Int {
        let sql =
            "SELECT count(*) \(table.fromClause(retiredColumn: true)) WHERE \(table.filterCondition(retiredColumn: true))"
        return Int(try db.queryOne(sql)?.int(0) ?? 0)
    }

    package func rows(_ table: CopyTable, after: [CopyValue]?, limit: Int) throws -> [[CopyValue]] {
        var conditions = [table.filterCondition(retiredColumn: true)]
        var arguments: [any SQLiteBindable] = []
        if let after {
            conditions.append(table.keysetCondition(placeholders: after.map { _ in "?" }))
            arguments += after.map(\.sqliteValue)
        }
        arguments.append(limit)
        let columns = table.columns.map { "t.\($0.name)" }.joined(separator: ", ")
        let sql = """
            SELECT \(columns) \(table.fromClause(retiredColumn: true)) WHERE \(conditions.joined(separator: " AND "))
            ORDER BY \(table.orderBy) LIMIT ?
            """
        return try db.query(sql, arguments).map { row in
            try row.values.indices.map { column in try Self.value(row.values[column], column, table) }
        }
    }

    package func end() {
        try? db.execute("ROLLBACK TRANSACTION")
        db.close()
    }

    /// A column as it travels; a type the plan does not expect is refused, never guessed.
    private static func value(_ value: SQLiteValue, _ column: Int, _ table: CopyTable) throws -> CopyValue {
        switch value {
        case .null: return .null
        case .integer(let value): return .integer(value)
        case .text(let value): return .text(value)
        case .real, .blob:
            throw StoreCopyError(
                "\(table.name).\(table.columns[column].name) holds a value that is neither integer nor text")
        }
    }
}

// MARK: - Target

/// Writes a copy into a SQLite file, created and migrated if needed, in one `BEGIN IMMEDIATE`
/// transaction: a failed copy leaves no half-filled database behind.
package final class SQLiteCopyTarget: CopyTarget {
    private let path: String
    private let migrations: [Migration]
    private var db: Database?
    /// Held while writing: a server started on the file meanwhile would cache what the copy is
    /// still changing, and a file a server holds is refused.
    private var lock: ServerLock?

    /// A target at `path`; nothing is opened or created yet.
    package init(path: String, migrations: [Migration]) {
        self.path = path
        self.migrations = migrations
    }

    package func firstNonEmptyKind(_ tables: [CopyTable]) throws -> String? {
        if let db { return try Self.firstNonEmptyKind(tables, in: db) }
        guard access(path, F_OK) == 0 else { return nil }
        var options = Database.Options()
        options.readOnly = true
        let reader = try Database(path: path, options: options)
        defer { reader.close() }
        return try Self.firstNonEmptyKind(tables, in: reader)
    }

    private static func firstNonEmptyKind(_ tables: [CopyTable], in db: Database) throws -> String? {
        for table in tables where try db.hasTable(table.name) {
            if try db.queryOne("SELECT 1 FROM \(table.name) LIMIT 1") != nil { return table.kind }
        }
        return nil
    }

    package func hasTable(_ table: CopyTable) throws -> Bool {
        guard let db else { throw StoreCopyError("the target is not open") }
        return try db.hasTable(table.name)
    }

    package func begin() throws {
        do {
            lock = try ServerLock(databasePath: path)
        } catch {
            throw StoreCopyError("\(error)")
        }
        let db: Database
        do {
            db = try Database(path: path)
        } catch {
            releaseLock()
            throw error
        }
        do {
            _ = try Migrator(migrations: migrations).migrate(db)
            try db.execute("BEGIN IMMEDIATE TRANSACTION")
        } catch {
            db.close()
            releaseLock()
            throw error
        }
        self.db = db
    }

    package func insert(_ table: CopyTable, _ rows: [[CopyValue]]) throws {
        guard let db else { throw StoreCopyError("the target is not open") }
        let names = table.columns.map(\.name).joined(separator: ", ")
        let placeholders = table.columns.map { _ in "?" }.joined(separator: ", ")
        let statement = try db.cachedStatement("INSERT INTO \(table.name) (\(names)) VALUES (\(placeholders))")
        for row in rows {
            try statement.run(row.map(\.sqliteValue))
        }
    }

    package func count(_ table: CopyTable) throws -> Int {
        guard let db else { throw StoreCopyError("the target is not open") }
        return Int(try db.queryOne("SELECT count(*) FROM \(table.name)")?.int(0) ?? 0)
    }

    package func commit(_ tables: [CopyTable]) throws {
        guard let db else { throw StoreCopyError("the target is not open") }
        // The subscriber keys were copied as they were; SQLite's INTEGER PRIMARY KEY picks the
        // next one above the largest, so nothing else needs moving.
        try db.execute("COMMIT TRANSACTION")
        db.close()
        self.db = nil
        releaseLock()
    }

    package func rollback() {
        guard let db else { return }
        try? db.execute("ROLLBACK TRANSACTION")
        db.close()
        self.db = nil
        releaseLock()
    }

    private func releaseLock() {
        lock?.release()
        lock = nil
    }
}

extension CopyValue {
    /// The value bound to a SQLite statement.
    var sqliteValue: SQLiteValue {
        switch self {
        case .null: .null
        case .integer(let value): .integer(value)
        case .text(let value): .text(value)
        }
    }
}

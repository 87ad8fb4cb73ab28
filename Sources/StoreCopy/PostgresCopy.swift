import JSON
import Migrations
import Postgres

// MARK: - Source

/// Reads a PostgreSQL store for `buzzkit copy` in one `REPEATABLE READ READ ONLY` transaction:
/// every batch comes from the snapshot its first query took, while servers keep writing
/// (<https://www.postgresql.org/docs/15/transaction-iso.html#XACT-REPEATABLE-READ>).
package final class PostgresCopySource: CopySource {
    private let connection: Connection
    /// Whether this schema marks absorbed subscribers retired instead of deleting them at once.
    private var retiredColumn = false

    /// Connects to `url`.
    /// - Parameters:
    ///   - url: A `postgres://` URL.
    ///   - migrations: This binary's PostgreSQL migrations: a source behind them is refused.
    package init(url: String, migrations: [Migration]) throws {
        connection = try Connection(url: url)
        let pending = try Postgres.Migrator(migrations: migrations).pending(connection)
        guard pending.isEmpty else {
            connection.close()
            throw StoreCopyError(
                "the source lacks migration(s) \(pending.map(\.identifier).joined(separator: ", ")); "
                    + "run `buzzkit migrate` on it first")
        }
        retiredColumn =
            try connection.queryOne(
                """
                SELECT 1 FROM information_schema.columns
                WHERE table_schema = current_schema() AND table_name = 'subscribers' AND column_name = 'retired'
                """, []) != nil
    }

    package func begin() throws {
        try connection.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
        // The snapshot is taken at the first statement, not at BEGIN.
        _ = try connection.queryOne("SELECT 1", [])
    }

    package func hasTable(_ table: CopyTable) throws -> Bool {
        try connection.hasTable(table.name)
    }

    package func count(_ table: CopyTable) throws -> Int {
        let sql =
            "SELECT count(*) \(table.fromClause(retiredColumn: retiredColumn)) WHERE \(table.filterCondition(retiredColumn: retiredColumn))"
        return Int(try connection.queryOne(sql, [])?.int(0) ?? 0)
    }

    package func rows(_ table: CopyTable, after: [CopyValue]?, limit: Int) throws -> [[CopyValue]] {
        var conditions = [table.filterCondition(retiredColumn: retiredColumn)]
        var arguments: [any PostgresBindable] = []
        if let after {
            conditions.append(table.keysetCondition(placeholders: after.indices.map { "$\($0 + 1)" }))
            arguments += after.map(\.postgresValue)
        }
        arguments.append(limit)
        // Every column as text: one reading whatever type the schema gave it, mapped by kind.
        let columns = table.columns.map { "t.\($0.name)::text" }.joined(separator: ", ")
        let sql = """
            SELECT \(columns) \(table.fromClause(retiredColumn: retiredColumn)) WHERE \(conditions.joined(separator: " AND "))
            ORDER BY \(table.orderBy) LIMIT $\(arguments.count)
            """
        let result = try connection.query(sql, arguments)
        return try result.map { row in
            try table.columns.indices.map { index in
                let column = table.columns[index]
                guard let text = try row.optionalString(index) else { return .null }
                return try CopyValue(postgresText: text, column, table)
            }
        }
    }

    package func end() {
        try? connection.execute("ROLLBACK")
        connection.close()
    }
}

// MARK: - Target

/// Writes a copy into a PostgreSQL database, migrated first (under the migrator's advisory
/// lock, so a server starting meanwhile does not race it), in one transaction of multi-row
/// `INSERT`s; the subscriber key sequence is moved past the copied keys before commit.
package final class PostgresCopyTarget: CopyTarget {
    private let connection: Connection
    private let migrations: [Migration]

    /// Connects to `url`; nothing is written yet.
    package init(url: String, migrations: [Migration]) throws {
        connection = try Connection(url: url)
        self.migrations = migrations
    }

    deinit { connection.close() }

    package func firstNonEmptyKind(_ tables: [CopyTable]) throws -> String? {
        for table in tables where try connection.hasTable(table.name) {
            if try connection.queryOne("SELECT 1 FROM \(table.name) LIMIT 1", []) != nil { return table.kind }
        }
        return nil
    }

    package func hasTable(_ table: CopyTable) throws -> Bool {
        try connection.hasTable(table.name)
    }

    package func begin() throws {
        _ = try Postgres.Migrator(migrations: migrations).migrate(connection)
        try connection.execute("BEGIN ISOLATION LEVEL READ COMMITTED")
        // Nobody else may fill the tables while the copy checks them empty and writes.
        let names = try CopyPlan.tables.filter { try connection.hasTable($0.name) }.map(\.name).joined(separator: ", ")
        try connection.execute("LOCK TABLE \(names) IN SHARE ROW EXCLUSIVE MODE")
    }

    package func insert(_ table: CopyTable, _ rows: [[CopyValue]]) throws {
        let names = table.columns.map(\.name).joined(separator: ", ")
        let width = table.columns.count
        // Untyped parameters: the server reads each as its column's type (boolean from 0/1,
        // jsonb from JSON text), whatever the schema chose. 65,535 parameters at most a statement.
        let perStatement = max(1, 60_000 / width)
        var start = 0
        while start < rows.count {
            let chunk = rows[start..<min(rows.count, start + perStatement)]
            var values: [String] = []
            var arguments: [any PostgresBindable] = []
            for row in chunk {
                let first = arguments.count
                values.append("(" + (1...width).map { "$\(first + $0)" }.joined(separator: ", ") + ")")
                arguments += row.map(\.postgresValue)
            }
            let overriding = table.serialColumn == nil ? "" : " OVERRIDING SYSTEM VALUE"
            try connection.execute(
                "INSERT INTO \(table.name) (\(names))\(overriding) VALUES \(values.joined(separator: ", "))", arguments)
            start += chunk.count
        }
    }

    package func count(_ table: CopyTable) throws -> Int {
        Int(try connection.queryOne("SELECT count(*) FROM \(table.name)", [])?.int(0) ?? 0)
    }

    package func commit(_ tables: [CopyTable]) throws {
        // Explicit keys do not move a sequence: without this the first new subscriber would
        // collide with a copied one.
        for table in tables {
            guard let column = table.serialColumn, try connection.hasTable(table.name) else { continue }
            try connection.execute(
                """
                SELECT setval(pg_get_serial_sequence('\(table.name)', '\(column)'),
                              GREATEST((SELECT max(\(column)) FROM \(table.name)), 1),
                              (SELECT max(\(column)) IS NOT NULL FROM \(table.name)))
                """, [])
        }
        try connection.execute("COMMIT")
    }

    package func rollback() {
        try? connection.execute("ROLLBACK")
    }
}

extension Connection {
    /// Whether the search path reaches a table of that name.
    fileprivate func hasTable(_ name: String) throws -> Bool {
        try queryOne("SELECT to_regclass($1) IS NOT NULL", [name])?.bool(0) ?? false
    }
}

extension CopyValue {
    /// The value bound to an untyped PostgreSQL parameter.
    var postgresValue: PostgresValue {
        switch self {
        case .null: .null
        case .integer(let value): .integer(value)
        case .text(let value): .text(value)
        }
    }

    /// A column read as text, back to the value both engines share.
    init(postgresText text: String, _ column: CopyColumn, _ table: CopyTable) throws {
        switch column.kind {
        case .integer:
            guard let value = Int64(text) else {
                throw StoreCopyError("\(table.name).\(column.name) holds \"\(text.prefix(20))\", not an integer")
            }
            self = .integer(value)
        case .boolean:
            switch text {
            case "true", "t", "1": self = .integer(1)
            case "false", "f", "0": self = .integer(0)
            default: throw StoreCopyError("\(table.name).\(column.name) holds a value that is not a boolean")
            }
        case .text:
            self = .text(text)
        case .json:
            // jsonb prints `{"a": 1}`; the stores write `{"a":1}`. Same value, the stores' spelling,
            // so a copy there and back is byte-identical (up to jsonb's key order).
            guard let value = try? JSONParser.parse(text, maxDepth: JSONParser.maximumDepth) else {
                throw StoreCopyError("\(table.name).\(column.name) holds text that is not JSON")
            }
            self = .text(value.jsonString)
        }
    }
}

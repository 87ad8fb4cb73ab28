import Foundation
import Migrations
import SQLite
import Storage
import StoreCopy
import Testing

/// The copier on SQLite files in process: keyset pages that end inside composite keys, the
/// retired rows left behind, refusal of a non-empty target, and a rollback on a count mismatch.
@Suite struct SQLiteCopyTests {
    let directory: URL
    let migrations: [Migration]

    init() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("buzzkit-copy-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        migrations = try SQLiteIdentityStore.bundledMigrations()
    }

    func path(_ name: String) -> String { directory.appendingPathComponent(name).path }

    /// A migrated database with two tenants, `people` subscribers with three events, two aliases,
    /// an attribute, a preference and a device each, and one retired subscriber with events.
    func makeSource(people: Int, name: String = "source.sqlite") throws -> String {
        let path = path(name)
        let db = try Database(path: path)
        defer { db.close() }
        _ = try Migrator(migrations: migrations).migrate(db)
        try db.transaction {
            try db.execute("INSERT INTO workspaces VALUES ('ws_1', 'w', 1)")
            for tenant in ["t_a", "t_b"] {
                try db.execute(
                    "INSERT INTO tenants VALUES (?, 'ws_1', ?, '{\"allowAnonymous\":false}', 'isec', NULL, NULL, 2)",
                    [tenant, "name-" + tenant])
                try db.execute(
                    "INSERT INTO api_keys VALUES (?, ?, 'secret', 'ws_1', ?, 'bk_secret_ab', 3, NULL)",
                    ["hash-" + tenant, "key-" + tenant, tenant])
            }
            for n in 1...people {
                let tenant = n % 2 == 0 ? "t_a" : "t_b"
                try db.execute(
                    "INSERT INTO subscribers (key, tenant_id, id, anonymous, last_seq, event_count, created_at, updated_at) VALUES (?, ?, ?, 0, 3, 3, ?, ?)",
                    [n * 2, tenant, "user-\(n)", n, n + 1])
                for alias in ["user-\(n)", "anon-\(n)"] {
                    try db.execute("INSERT INTO aliases VALUES (?, ?, ?)", [tenant, alias, n * 2])
                }
                try db.execute("INSERT INTO attributes VALUES (?, 'plan', '{\"tier\":[1,2]}', 1)", [n * 2])
                try db.execute("INSERT INTO preferences VALUES (?, 'news', 1, 5)", [n * 2])
                try db.execute(
                    "INSERT INTO devices VALUES (?, 'phone', 'ios', '1.0', NULL, NULL, 'fr', NULL, 6)", [n * 2])
                for seq in 1...3 {
                    try db.execute(
                        "INSERT INTO events VALUES (?, ?, ?, 'screen', 7, 8, ?)",
                        [n * 2, seq, "e\(seq)", seq == 2 ? nil : "{\"n\":\(seq)}"])
                }
            }
            try db.execute(
                "INSERT INTO subscribers (key, tenant_id, id, anonymous, retired, created_at, updated_at) VALUES (1, 't_a', 'retired', 1, 1, 1, 1)"
            )
            try db.execute("INSERT INTO events VALUES (1, 1, 'old', 'x', 1, 1, NULL)")
        }
        return path
    }

    /// Every row of every table, in primary-key order, as text.
    func dump(_ path: String, excludingRetired: Bool = false) throws -> [String: [String]] {
        let db = try Database(path: path)
        defer { db.close() }
        var tables: [String: [String]] = [:]
        for table in CopyPlan.tables
        where try db.queryOne("SELECT 1 FROM sqlite_master WHERE name = ?", [table.name]) != nil {
            let order = table.key.joined(separator: ", ")
            tables[table.name] = try db.query("SELECT * FROM \(table.name) ORDER BY \(order)").compactMap { row in
                let text = row.values.map { "\($0)" }.joined(separator: "|")
                let keyColumn = table.name == "subscribers" ? "key" : "subscriber_key"
                guard excludingRetired, row.columnNames.contains(keyColumn) else { return text }
                return row.int(keyColumn) == 1 ? nil : text
            }
        }
        return tables
    }

    @Test func pagesOfSevenCopyEveryLiveRowExactly() throws {
        let source = try makeSource(people: 40)
        let target = path("copy/target.sqlite")
        try FileManager.default.createDirectory(
            atPath: path("copy"), withIntermediateDirectories: true)
        var copier = StoreCopier()
        copier.batchSize = 7  // pages end inside a subscriber's events and aliases
        var printed: [String] = []
        let counts = try copier.copy(
            from: try SQLiteCopySource(path: source, migrations: migrations),
            to: SQLiteCopyTarget(path: target, migrations: migrations)
        ) { printed.append("\($0.kind): \($0.target)") }
        #expect(printed.first == "workspaces: 1")
        #expect(counts.first { $0.kind == "events" }?.target == 120)
        #expect(counts.first { $0.kind == "subscribers" }?.target == 40)
        #expect(counts.allSatisfy { $0.source == $0.target })
        let expected = try dump(source, excludingRetired: true)
        let copied = try dump(target)
        for table in CopyPlan.tables { #expect(copied[table.name] == expected[table.name], "\(table.name)") }
        // The migration ledger came from the target's own migrator.
        let db = try Database(path: target)
        defer { db.close() }
        #expect(try db.queryOne("SELECT count(*) FROM schema_migrations")?.int(0) == Int64(migrations.count))
    }

    @Test func aNonEmptyTargetIsRefusedBeforeAnythingIsWritten() throws {
        let source = try makeSource(people: 3)
        let target = path("target.sqlite")
        let db = try Database(path: target)
        _ = try Migrator(migrations: migrations).migrate(db)
        try db.execute("INSERT INTO workspaces VALUES ('ws_other', 'mine', 1)")
        db.close()
        let before = try dump(target)
        #expect(throws: StoreCopyError.self) {
            try StoreCopier().copy(
                from: try SQLiteCopySource(path: source, migrations: migrations),
                to: SQLiteCopyTarget(path: target, migrations: migrations))
        }
        #expect(try dump(target) == before)
    }

    /// A retired subscriber whose events still move to its person (migration 0006): a copy of
    /// that snapshot would lose them, so it is refused; once the moves are finished, as
    /// `buzzkit copy` does first, the events arrive on their person.
    @Test func pendingEventMovesAreFinishedNeverLost() throws {
        let source = try makeSource(people: 3)
        let db = try Database(path: source)
        try db.execute("INSERT INTO event_moves (source_key, target_key, seq_offset) VALUES (1, 2, 3)")
        db.close()
        let target = path("target.sqlite")
        #expect(throws: StoreCopyError.self) {
            try StoreCopier().copy(
                from: try SQLiteCopySource(path: source, migrations: migrations),
                to: SQLiteCopyTarget(path: target, migrations: migrations))
        }

        #expect(try SQLiteIdentityStore.finishEventMoves(path: source) == 1)
        let counts = try StoreCopier().copy(
            from: try SQLiteCopySource(path: source, migrations: migrations),
            to: SQLiteCopyTarget(path: target, migrations: migrations))
        #expect(counts.first { $0.kind == "events" }?.target == 10)  // 3 × 3, and the moved one
        let copied = try Database(path: target)
        defer { copied.close() }
        let moved = try copied.queryOne("SELECT seq, client_id FROM events WHERE subscriber_key = 2 AND seq = 4")
        #expect(moved?.string("client_id") == "old")
    }

    /// A source that loses one event row on the way: the counts disagree, nothing is committed.
    final class LossySource: CopySource {
        let inner: any CopySource
        init(_ inner: any CopySource) { self.inner = inner }
        func begin() throws { try inner.begin() }
        func hasTable(_ table: CopyTable) throws -> Bool { try inner.hasTable(table) }
        func count(_ table: CopyTable) throws -> Int { try inner.count(table) }
        func rows(_ table: CopyTable, after: [CopyValue]?, limit: Int) throws -> [[CopyValue]] {
            let rows = try inner.rows(table, after: after, limit: limit)
            return table.name == "events" && after == nil ? Array(rows.dropFirst()) : rows
        }
        func end() { inner.end() }
    }

    @Test func aCountMismatchRollsBackTheWholeCopy() throws {
        let source = try makeSource(people: 5)
        let target = path("target.sqlite")
        do {
            try StoreCopier().copy(
                from: LossySource(try SQLiteCopySource(path: source, migrations: migrations)),
                to: SQLiteCopyTarget(path: target, migrations: migrations))
            Issue.record("a lost row must fail the copy")
        } catch let error as StoreCopyError {
            #expect(error.message.contains("events"), "\(error.message)")
        }
        // Migrated, but not one row: the next attempt is accepted.
        #expect(try dump(target).values.allSatisfy(\.isEmpty))
        try StoreCopier().copy(
            from: try SQLiteCopySource(path: source, migrations: migrations),
            to: SQLiteCopyTarget(path: target, migrations: migrations))
        #expect(try dump(target)["events"]?.count == 15)
    }

    /// The webhook endpoints table, as the webhooks branch's migration 0003 makes it.
    static let webhookEndpointsSQL = """
        CREATE TABLE IF NOT EXISTS webhook_endpoints (
            key INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, tenant_id TEXT NOT NULL REFERENCES tenants(id),
            url TEXT NOT NULL, events TEXT NOT NULL, description TEXT, secret TEXT NOT NULL,
            enabled INTEGER NOT NULL DEFAULT 1, created_at INTEGER NOT NULL)
        """

    @Test func webhookEndpointsMoveWhenBothSchemasHaveThem() throws {
        let source = try makeSource(people: 2)
        let db = try Database(path: source)
        try db.execute(Self.webhookEndpointsSQL)
        try db.execute(
            "INSERT INTO webhook_endpoints VALUES (3, 'whk_1', 't_a', 'https://x.test/h', '*', NULL, 'whsec_s', 0, 9)")
        db.close()

        // A target whose schema lacks the table (migrated before 0003) is refused, and left empty.
        let older = path("older.sqlite")
        let beforeWebhooks = migrations.filter { $0.version < 3 }
        #expect(throws: StoreCopyError.self) {
            try StoreCopier().copy(
                from: try SQLiteCopySource(path: source, migrations: migrations),
                to: SQLiteCopyTarget(path: older, migrations: beforeWebhooks))
        }
        #expect(try dump(older).values.allSatisfy(\.isEmpty))

        // An empty one is no reason to refuse.
        let emptySource = try makeSource(people: 1, name: "empty-hooks.sqlite")
        let plain = try Database(path: emptySource)
        try plain.execute(Self.webhookEndpointsSQL)
        plain.close()
        let plainCounts = try StoreCopier().copy(
            from: try SQLiteCopySource(path: emptySource, migrations: migrations),
            to: SQLiteCopyTarget(path: path("plain.sqlite"), migrations: migrations))
        // Migration 0003 gives every schema the table; an empty one moves nothing.
        #expect(plainCounts.first { $0.kind == "webhook endpoints" }.map { $0.source == 0 && $0.target == 0 } ?? true)

        let newer = path("newer.sqlite")
        let target = try Database(path: newer)
        _ = try Migrator(migrations: migrations).migrate(target)
        try target.execute(Self.webhookEndpointsSQL)
        target.close()
        let counts = try StoreCopier().copy(
            from: try SQLiteCopySource(path: source, migrations: migrations),
            to: SQLiteCopyTarget(path: newer, migrations: migrations))
        #expect(counts.last?.kind == "webhook endpoints")
        #expect(counts.last?.source == 1 && counts.last?.target == 1)
        #expect(try dump(newer)["webhook_endpoints"] == (try dump(source)["webhook_endpoints"]))
    }
}

import Migrations
import SQLite
import Testing

@Suite struct MigrationTests {
    let directory = TemporaryDirectory()

    static let initial = try! Migration(
        fileName: "0001_initial.sql",
        sql: """
            CREATE TABLE users(id INTEGER PRIMARY KEY, email TEXT NOT NULL UNIQUE);
            CREATE TABLE sessions(id INTEGER PRIMARY KEY, user_id INTEGER NOT NULL REFERENCES users(id));
            """)
    static let addName = try! Migration(
        fileName: "0002_add_name.sql", sql: "ALTER TABLE users ADD COLUMN name TEXT;")
    static let seed = try! Migration(
        fileName: "0003_seed.sql", sql: "INSERT INTO users(email, name) VALUES ('a@example.com', 'A');")

    @Test func parsesFileNames() throws {
        let migration = try Migration(fileName: "migrations/0042_add-index_2.sql", sql: "SELECT 1;")
        #expect(migration.version == 42)
        #expect(migration.name == "add-index_2")
        #expect(migration.identifier == "0042_add-index_2")
        #expect(migration.checksum.count == 16)
        #expect(Migration.checksum(of: "") == "cbf29ce484222325")  // FNV-1a 64 offset basis
        #expect(Migration.checksum(of: "a") == "af63dc4c8601ec8c")  // published test vector
        for bad in [
            "initial.sql", "0001_.sql", "0001_initial.txt", "0000_zero.sql", "x1_a.sql", "0001 initial.sql", "_a.sql",
        ] {
            let error = #expect(throws: MigrationError.self, "\(bad)") { try Migration(fileName: bad, sql: "") }
            #expect(error?.kind == .invalidFileName)
        }
        let duplicate = #expect(throws: MigrationError.self) {
            try Migrator(migrations: [Self.initial, Migration(version: 1, name: "again", sql: "")])
        }
        #expect(duplicate?.kind == .duplicateVersion)
    }

    @Test(arguments: Location.allCases)
    func appliesInOrderOnceAndRecordsTheLedger(_ location: Location) throws {
        let db = try location.open(directory)
        let migrator = try Migrator(migrations: [Self.seed, Self.initial, Self.addName])  // any order
        #expect(try migrator.pending(db).map(\.version) == [1, 2, 3])
        #expect(try db.queryOne("SELECT 1 FROM sqlite_master WHERE name = 'schema_migrations'") == nil)

        let applied = try migrator.migrate(db)
        #expect(applied.map(\.identifier) == ["0001_initial", "0002_add_name", "0003_seed"])
        #expect(try db.queryOne("SELECT name FROM users")?.string("name") == "A")
        let ledger = try db.query("SELECT version, name, checksum, applied_at FROM schema_migrations ORDER BY version")
        #expect(ledger.map { $0.int("version") } == [1, 2, 3])
        #expect(ledger[0].string("checksum") == Self.initial.checksum)
        #expect(ledger[0].string("applied_at")?.hasSuffix("Z") == true)

        #expect(try migrator.migrate(db).isEmpty)
        #expect(try migrator.pending(db).isEmpty)
        #expect(try db.queryOne("SELECT count(*) FROM users")?.int(0) == 1)  // the seed ran once
        #expect(try db.queryOne("PRAGMA foreign_keys")?.int(0) == 1)  // restored after migrating
        db.close()
        #expect(db.openStatementCount == 0)
    }

    @Test func appliesOnlyNewMigrationsLater() throws {
        let db = try Database(path: directory.file("m.sqlite"))
        #expect(try Migrator(migrations: [Self.initial]).migrate(db).map(\.version) == [1])
        let later = try Migrator(migrations: [Self.initial, Self.addName, Self.seed])
        #expect(try later.pending(db).map(\.version) == [2, 3])
        #expect(try later.migrate(db).map(\.version) == [2, 3])
    }

    @Test func refusesAnEditedMigration() throws {
        let db = try Database(path: ":memory:")
        _ = try Migrator(migrations: [Self.initial]).migrate(db)
        var edited = Self.initial
        edited = Migration(version: 1, name: "initial", sql: edited.sql + "\n-- tweak")
        let error = #expect(throws: MigrationError.self) {
            try Migrator(migrations: [edited, Self.addName]).migrate(db)
        }
        #expect(error?.kind == .edited)
        #expect(error?.description.contains("migration 0001_initial was edited after it was applied") == true)
        // 0002 did not run
        #expect(try db.queryOne("SELECT 1 FROM pragma_table_info('users') WHERE name = 'name'") == nil)

        let renamed = Migration(version: 1, name: "first", sql: Self.initial.sql)
        let renameError = #expect(throws: MigrationError.self) { try Migrator(migrations: [renamed]).pending(db) }
        #expect(renameError?.kind == .edited)
    }

    @Test func refusesADatabaseNewerThanTheBinary() throws {
        let db = try Database(path: ":memory:")
        _ = try Migrator(migrations: [Self.initial, Self.addName]).migrate(db)
        let error = #expect(throws: MigrationError.self) { try Migrator(migrations: [Self.initial]).migrate(db) }
        #expect(error?.kind == .unknownVersion)
        #expect(error?.description.contains("database is newer than this binary") == true)
        #expect(error?.description.contains("0002_add_name") == true)
    }

    @Test func refusesAMigrationNumberedBelowAnAppliedOne() throws {
        let db = try Database(path: ":memory:")
        let third = Migration(version: 3, name: "index", sql: "CREATE INDEX sessions_user ON sessions(user_id);")
        _ = try Migrator(migrations: [Self.initial, third]).migrate(db)
        let error = #expect(throws: MigrationError.self) {
            try Migrator(migrations: [Self.initial, Self.addName, third]).migrate(db)
        }
        #expect(error?.kind == .outOfOrder)
    }

    @Test func failingSQLRollsBackThatMigrationAndNamesIt() throws {
        let db = try Database(path: directory.file("fail.sqlite"))
        let broken = try Migration(
            fileName: "0002_broken.sql",
            sql: "CREATE TABLE half(a); INSERT INTO nowhere VALUES (1);")
        let error = #expect(throws: MigrationError.self) {
            try Migrator(migrations: [Self.initial, broken, Self.seed]).migrate(db)
        }
        #expect(error?.kind == .failed)
        #expect(error?.description.contains("migration 0002_broken failed") == true)
        #expect(error?.description.contains("no such table: nowhere") == true)
        #expect((error?.underlying as? SQLiteError)?.code == 1)
        // 0001 stays applied, 0002 left nothing behind, 0003 never ran.
        #expect(try db.query("SELECT version FROM schema_migrations").map { $0.int(0) } == [1])
        #expect(try db.queryOne("SELECT 1 FROM sqlite_master WHERE name = 'half'") == nil)
        #expect(try db.queryOne("SELECT count(*) FROM users")?.int(0) == 0)
        #expect(!db.isInTransaction)
    }

    @Test func foreignKeyViolationsAreRefusedBeforeCommit() throws {
        let db = try Database(path: ":memory:")
        let orphan = try Migration(fileName: "0002_orphan.sql", sql: "INSERT INTO sessions(user_id) VALUES (99);")
        let error = #expect(throws: MigrationError.self) {
            try Migrator(migrations: [Self.initial, orphan]).migrate(db)
        }
        #expect(error?.kind == .foreignKeyViolation)
        #expect(error?.description.contains("0002_orphan") == true)
        #expect(try db.queryOne("SELECT count(*) FROM sessions")?.int(0) == 0)
        #expect(try db.query("SELECT version FROM schema_migrations").map { $0.int(0) } == [1])
    }
}

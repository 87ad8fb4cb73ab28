import Foundation
import Migrations
import Postgres
import TestSupport
import Testing

@Suite(.enabled(if: PostgresTestDatabase.isAvailable, "BUZZKIT_TEST_POSTGRES_URL is not set"))
struct ConnectionPoolTests {
    let database = try! PostgresTestDatabase.make()!

    @Test func neverOpensMoreThanItsLimit() throws {
        let pool = ConnectionPool(url: database.url, maxConnections: 3)
        defer { pool.close() }
        let peak = Mutex2(0)
        let current = Mutex2(0)
        // Real threads, not concurrentPerform: on a 2-core machine that would run only 2 at once.
        let group = DispatchGroup()
        for _ in 0..<8 {
            group.enter()
            Thread {
                for _ in 0..<3 {
                    try! pool.withConnection { db in
                        current.mutate { $0 += 1 }
                        peak.mutate { [now = current.value] in $0 = max($0, now) }
                        _ = try db.query("SELECT pg_sleep(0.01)")
                        current.mutate { $0 -= 1 }
                    }
                }
                group.leave()
            }.start()
        }
        group.wait()
        let statistics = pool.statistics
        #expect(peak.value <= 3)
        #expect(statistics.open <= 3)
        #expect(statistics.inUse == 0)
        #expect(statistics.waits > 0)
        let backends = try pool.withConnection {
            try $0.queryOne("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()")!.int(0)
        }
        #expect(backends <= 3)
    }

    @Test func timesOutWhenEveryConnectionIsLent() throws {
        let pool = ConnectionPool(url: database.url, maxConnections: 1, acquireTimeout: .milliseconds(100))
        defer { pool.close() }
        try pool.withConnection { _ in
            let error = #expect(throws: PostgresError.self) { try pool.withConnection { _ in } }
            #expect(error?.sqlState == "53300")
        }
    }

    @Test func dropsAConnectionThatComesBackBroken() throws {
        let pool = ConnectionPool(url: database.url, maxConnections: 2)
        defer { pool.close() }
        let first = try pool.withConnection { $0.backendPID }
        // The server ends that session (as a restart would).
        let killer = try Connection(url: database.url)
        _ = try killer.query("SELECT pg_terminate_backend($1)", [Int64(first)])
        let error = #expect(throws: PostgresError.self) { try pool.withConnection { try $0.query("SELECT 1") } }
        #expect(error?.isConnectionFailure == true)
        let next = try pool.withConnection { db in
            _ = try db.query("SELECT 1")
            return db.backendPID
        }
        #expect(next != first)
        #expect(pool.statistics.discarded == 1)
    }
}

@Suite(.enabled(if: PostgresTestDatabase.isAvailable, "BUZZKIT_TEST_POSTGRES_URL is not set"))
struct MigrationTests {
    let database = try! PostgresTestDatabase.make()!

    static let initial = try! Migration(
        fileName: "0001_initial.sql",
        sql: """
            CREATE TABLE users(id bigserial PRIMARY KEY, email text NOT NULL UNIQUE);
            CREATE TABLE sessions(id bigserial PRIMARY KEY, user_id bigint NOT NULL REFERENCES users(id));
            """)
    static let addName = try! Migration(fileName: "0002_add_name.sql", sql: "ALTER TABLE users ADD COLUMN name text;")
    static let seed = try! Migration(
        fileName: "0003_seed.sql", sql: "INSERT INTO users(email, name) VALUES ('a@example.com', 'A');")

    @Test func appliesInOrderOnceAndRecordsTheLedger() throws {
        let db = try Connection(url: database.url)
        let migrator = try Migrator(migrations: [Self.seed, Self.initial, Self.addName])
        #expect(try migrator.pending(db).map(\.version) == [1, 2, 3])
        #expect(try migrator.migrate(db).map(\.identifier) == ["0001_initial", "0002_add_name", "0003_seed"])
        #expect(try migrator.migrate(db).isEmpty)
        #expect(try db.queryOne("SELECT count(*) FROM users")!.int(0) == 1)
        let ledger = try db.query("SELECT version, checksum FROM schema_migrations ORDER BY version")
        #expect(try ledger.map { try $0.int(0) } == [1, 2, 3])
        #expect(try ledger[0].string(1) == Self.initial.checksum)
    }

    @Test func refusesEditedUnknownAndOutOfOrderMigrations() throws {
        let db = try Connection(url: database.url)
        _ = try Migrator(migrations: [Self.initial, Self.addName]).migrate(db)

        let edited = Migration(version: 2, name: "add_name", sql: "ALTER TABLE users ADD COLUMN name varchar;")
        let editError = #expect(throws: MigrationError.self) {
            try Migrator(migrations: [Self.initial, edited]).migrate(db)
        }
        #expect(editError?.kind == .edited)

        let newer = #expect(throws: MigrationError.self) { try Migrator(migrations: [Self.initial]).migrate(db) }
        #expect(newer?.kind == .unknownVersion)
        #expect(newer?.message.contains("0002_add_name") == true)

        let failing = Migration(version: 3, name: "broken", sql: "CREATE TABLE x(a integer); SELECT nope;")
        let failed = #expect(throws: MigrationError.self) {
            try Migrator(migrations: [Self.initial, Self.addName, failing]).migrate(db)
        }
        #expect(failed?.kind == .failed)
        #expect(try db.queryOne("SELECT to_regclass('x') IS NULL")!.bool(0))  // rolled back whole
    }

    @Test func serversStartingTogetherMigrateOnce() throws {
        // Each migration counts its own runs in a table the first one creates.
        let counted = (1...3).map { version in
            Migration(
                version: version, name: "step\(version)",
                sql: (version == 1 ? "CREATE TABLE runs(version integer);" : "")
                    + "SELECT pg_sleep(0.05); INSERT INTO runs VALUES (\(version));")
        }
        let migrator = try Migrator(migrations: counted)
        let url = database.url
        let applied = Mutex2<[Int]>([])
        let group = DispatchGroup()
        for _ in 0..<6 {
            group.enter()
            Thread {
                let db = try! Connection(url: url)
                let mine = try! migrator.migrate(db)
                applied.mutate { $0 += mine.map(\.version) }
                group.leave()
            }.start()
        }
        group.wait()
        #expect(applied.value.sorted() == [1, 2, 3])
        let db = try Connection(url: url)
        #expect(try db.query("SELECT version FROM runs ORDER BY version").map { try $0.int(0) } == [1, 2, 3])
    }
}

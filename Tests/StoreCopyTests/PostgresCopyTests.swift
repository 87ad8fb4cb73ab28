import Foundation
import Postgres
import PostgresStorage
import SQLite
import Storage
import StoreCopy
import TestSupport
import Testing

/// SQLite → PostgreSQL → SQLite through the copier, on the test PostgreSQL: every live row
/// comes back as it was, and the subscriber key sequence continues after the copied keys.
@Suite(.enabled(if: PostgresTestDatabase.isAvailable, "needs BUZZKIT_TEST_POSTGRES_URL"))
struct PostgresCopyTests {
    let sqlite = try! SQLiteCopyTests()
    let postgresMigrations = try! PostgresIdentityStore.bundledMigrations()

    @Test func sqliteToPostgresAndBackKeepsEveryRow() throws {
        let database = try #require(try PostgresTestDatabase.make())
        defer { database.drop() }
        let source = try sqlite.makeSource(people: 30)
        var copier = StoreCopier()
        copier.batchSize = 11
        try copier.copy(
            from: try SQLiteCopySource(path: source, migrations: sqlite.migrations),
            to: try PostgresCopyTarget(url: database.url, migrations: postgresMigrations))

        let back = sqlite.path("back.sqlite")
        let counts = try copier.copy(
            from: try PostgresCopySource(url: database.url, migrations: postgresMigrations),
            to: SQLiteCopyTarget(path: back, migrations: sqlite.migrations))
        #expect(counts.first { $0.kind == "events" }?.target == 90)
        let expected = try sqlite.dump(source, excludingRetired: true)
        let copied = try sqlite.dump(back)
        for table in CopyPlan.tables { #expect(copied[table.name] == expected[table.name], "\(table.name)") }

        // A subscriber created after the copy takes a key above every copied one.
        let connection = try Connection(url: database.url)
        defer { connection.close() }
        let key = try #require(
            try connection.queryOne(
                "INSERT INTO subscribers (tenant_id, id, anonymous, created_at, updated_at) VALUES ('t_a', 'new', false, 1, 1) RETURNING key",
                []
            )?.int(0))
        #expect(key > 60)

        // And the filled PostgreSQL target refuses a second copy.
        #expect(throws: StoreCopyError.self) {
            try StoreCopier().copy(
                from: try SQLiteCopySource(path: source, migrations: sqlite.migrations),
                to: try PostgresCopyTarget(url: database.url, migrations: postgresMigrations))
        }
    }
}

import Foundation
import Postgres
import TestSupport
import Testing

/// The commands of API.md §11 on a PostgreSQL URL (§12): migrate, backup's refusal, serve's
/// readiness and metrics.
@Suite(.enabled(if: PostgresTestDatabase.isAvailable, "BUZZKIT_TEST_POSTGRES_URL is not set"))
struct PostgresCLITests {
    @Test func migrateAppliesOnceAndRecordsTheLedger() throws {
        let database = try #require(try PostgresTestDatabase.make())
        let first = try runBuzzkit(["migrate", "--database", database.url])
        #expect(first.status == 0, "\(first.stderr)")
        #expect(
            first.stdout
                == "applied: 0001_initial, 0002_idempotency_and_webhooks, 0003_snapshot_versions, 0004_outbox_one_row\n"
        )
        let again = try runBuzzkit(["migrate", "--database", database.url])
        #expect(again.stdout == "database is up to date\n")
        let db = try Connection(url: database.url)
        #expect(
            try db.query("SELECT version FROM schema_migrations ORDER BY version").map { try $0.int(0) }
                == [1, 2, 3, 4])
        // A database newer than the binary is refused, naming the migration.
        try db.execute("INSERT INTO schema_migrations(version, name, checksum) VALUES (99, 'future', 'x')", [])
        let newer = try runBuzzkit(["migrate", "--database", database.url])
        #expect(newer.status == 1)
        #expect(newer.stderr.contains("0099_future"), "\(newer.stderr)")
    }

    @Test func backupPointsToPgDump() throws {
        let database = try #require(try PostgresTestDatabase.make())
        let result = try runBuzzkit(["backup", "/tmp/never-written-\(UUID().uuidString)", "--database", database.url])
        #expect(result.status != 0)
        #expect(result.stderr.contains("pg_dump"), "\(result.stderr)")
    }

    @Test func readyzChecksTheDatabaseAndMetricsShowThePool() throws {
        let server = try TestServer.start(store: .postgres)
        defer { server.stop() }
        let client = try HTTPClient(port: server.port)
        #expect(try client.send("GET", "/readyz").status == 200)
        let metrics = try client.send("GET", "/metrics").text
        for name in [
            "buzzkit_db_pool_connections_open", "buzzkit_db_pool_connections_in_use", "buzzkit_db_pool_connections_max",
            "buzzkit_db_write_retries_total",
        ] {
            #expect(metrics.contains("\n\(name) "), "\(name) in /metrics")
        }
        // The database goes away: readiness says so (503), the process stays up.
        let name = try #require(server.databasePath.split(separator: "/").last.map(String.init))
        let admin = try Connection(url: try #require(PostgresTestDatabase.serverURL))
        try admin.execute("DROP DATABASE \(name) WITH (FORCE)")
        let after = try HTTPClient(port: server.port).send("GET", "/readyz")
        #expect(after.status == 503, "\(after.text)")
    }
}

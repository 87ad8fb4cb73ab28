import Foundation
import Glibc
import TestSupport
import XCTest

/// API.md §12: a SQLite file is served by one process. A second `buzzkit serve` on it refuses
/// to start and says why; the offline commands that are safe alongside a server keep working.
final class CLIServerLockTests: XCTestCase {
    func testASecondServerOnTheSameFileRefusesToStart() throws {
        let first = try TestServer.start()
        defer { first.stop() }
        let database = first.databasePath

        let second = try runBuzzkit(["serve", "--port", "0", "--database", database], timeout: 20)
        XCTAssertNotEqual(second.status, 0, "a second server started: \(second.stdout)")
        XCTAssertFalse(second.stdout.contains("listening on"), second.stdout)
        XCTAssertTrue(second.stderr.contains("another buzzkit serve is using this database"), second.stderr)
        XCTAssertTrue(
            second.stderr.contains("process \(first.process.processIdentifier)"), "names the holder: \(second.stderr)")

        // The first one is unharmed.
        let tenant = try first.createTenant(name: "still-serving")
        XCTAssertEqual(try HTTPClient(port: first.port).send("GET", "/v1/tenant", headers: tenant.backend).status, 200)

        // Offline commands that SQLite's own locking makes safe still work while served...
        let created = try runBuzzkit(["tenant", "create", "offline", "--database", database])
        XCTAssertEqual(created.status, 0, created.stderr)
        let backupPath = first.directory.appendingPathComponent("copy.sqlite").path
        let backup = try runBuzzkit(["backup", backupPath, "--database", database])
        XCTAssertEqual(backup.status, 0, backup.stderr)
        // ...but the schema does not change under a running server.
        let migrate = try runBuzzkit(["migrate", "--database", database])
        XCTAssertNotEqual(migrate.status, 0)
        XCTAssertTrue(migrate.stderr.contains("another buzzkit serve"), migrate.stderr)

        // Once the first stops (cleanly here; a SIGKILL frees the lock the same way), a new one starts.
        XCTAssertEqual(first.stop(), 0)
        let next = try TestServer.start(databasePath: database)
        defer { next.stop() }
        XCTAssertEqual(try HTTPClient(port: next.port).send("GET", "/healthz").status, 200)
    }

    func testAKilledServerLeavesNoStaleLock() throws {
        let first = try TestServer.start()
        first.kill()
        let next = try TestServer.start(databasePath: first.databasePath)
        defer { next.stop() }
        XCTAssertEqual(try HTTPClient(port: next.port).send("GET", "/healthz").status, 200)
    }
}

import Foundation
import Glibc
import TestSupport
import XCTest

/// The `buzzkit` commands as an operator runs them (API.md §11).
final class CLITests: XCTestCase {
    private var directory: URL!

    override func setUpWithError() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("buzzkit-cli-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    }

    override func tearDown() {
        try? FileManager.default.removeItem(at: directory)
    }

    private func path(_ name: String) -> String { directory.appendingPathComponent(name).path }

    /// `serve --port 0` creates the database folder, prints `listening on http://HOST:PORT`
    /// once it accepts, and exits 0 on SIGTERM.
    func testServeCreatesTheFolderAndPrintsTheListeningLine() throws {
        let database = path("deep/er/folder/buzzkit.sqlite")
        XCTAssertFalse(FileManager.default.fileExists(atPath: path("deep")))
        let process = Process()
        process.executableURL = URL(fileURLWithPath: TestServer.binaryPath)
        process.arguments = ["serve", "--port", "0", "--database", database]
        process.currentDirectoryURL = directory  // no config/buzzkit.json here: defaults
        let stdout = Pipe()
        process.standardOutput = stdout
        process.standardError = FileHandle.nullDevice
        try process.run()
        defer {
            if process.isRunning {
                kill(process.processIdentifier, SIGKILL)
                process.waitUntilExit()
            }
        }
        var text = ""
        let deadline = Date().addingTimeInterval(20)
        while !text.contains("\n") && Date() < deadline && process.isRunning {
            text += String(decoding: stdout.fileHandleForReading.availableData, as: UTF8.self)
        }
        let line = text.split(separator: "\n").first.map(String.init) ?? ""
        let match = line.wholeMatch(of: /listening on http:\/\/127\.0\.0\.1:(\d+)/)
        XCTAssertNotNil(match, "listening line: \(line)")
        let port = match.flatMap { Int($0.1) } ?? 0
        XCTAssertGreaterThan(port, 0)
        XCTAssertTrue(FileManager.default.fileExists(atPath: database), "serve creates the folder and the database")
        // It accepts once it said so.
        XCTAssertEqual(try HTTPClient(port: port, timeoutSeconds: 5).send("GET", "/readyz").status, 200)
        kill(process.processIdentifier, SIGTERM)
        process.waitUntilExit()
        XCTAssertEqual(process.terminationReason, .exit)
        XCTAssertEqual(process.terminationStatus, 0)
        XCTAssertEqual(try sqlite(database, "PRAGMA integrity_check"), "ok")
    }

    /// Migrations apply on a fresh database, are skipped when applied, and a changed checksum
    /// is refused by both `migrate` and `serve` with a clear message.
    func testMigrationsApplyOnceAndRefuseAChangedChecksum() throws {
        let database = path("m/buzzkit.sqlite")
        let first = try runBuzzkit(["migrate", "--database", database])
        XCTAssertEqual(first.status, 0, first.stderr)
        XCTAssertTrue(first.stdout.hasPrefix("applied: 0001_initial"), first.stdout)
        let ledger = try sqlite(database, "SELECT version, name FROM schema_migrations ORDER BY version")
        // One ledger row per file of migrations/.
        let migrationsFolder = repositoryRoot.appendingPathComponent("migrations")
        let files = try FileManager.default.contentsOfDirectory(atPath: migrationsFolder.path).filter {
            $0.hasSuffix(".sql")
        }
        XCTAssertEqual(ledger.split(separator: "\n").count, files.count, ledger)
        XCTAssertTrue(ledger.hasPrefix("1|"), ledger)

        let second = try runBuzzkit(["migrate", "--database", database])
        XCTAssertEqual(second.status, 0, second.stderr)
        XCTAssertEqual(second.stdout.trimmingCharacters(in: .whitespacesAndNewlines), "database is up to date")
        XCTAssertEqual(
            try sqlite(database, "SELECT version, name FROM schema_migrations ORDER BY version"), ledger,
            "nothing re-applied")

        // A serve on the migrated database starts (nothing to apply).
        let server = try TestServer.start(databasePath: database)
        XCTAssertEqual(try HTTPClient(port: server.port, timeoutSeconds: 5).send("GET", "/readyz").status, 200)
        XCTAssertEqual(server.stop(), 0)

        _ = try sqlite(database, "UPDATE schema_migrations SET checksum = 'x' WHERE version = 1")
        let tampered = try runBuzzkit(["migrate", "--database", database])
        XCTAssertNotEqual(tampered.status, 0)
        XCTAssertTrue(tampered.stderr.contains("0001_initial"), tampered.stderr)
        XCTAssertTrue(tampered.stderr.contains("edited"), tampered.stderr)
        XCTAssertFalse(tampered.stderr.contains("Fatal error"), tampered.stderr)

        let serve = try runBuzzkit(["serve", "--port", "0", "--database", database], timeout: 10)
        XCTAssertNotEqual(serve.status, 0)
        XCTAssertFalse(serve.stdout.contains("listening on"), "must not serve a database it cannot trust")
        XCTAssertTrue(serve.stderr.contains("0001_initial"), serve.stderr)
        // Nothing was changed by the refusals.
        XCTAssertEqual(try sqlite(database, "SELECT checksum FROM schema_migrations WHERE version = 1"), "x")
    }

    /// `backup DEST` while the server runs: a database that passes integrity_check and holds the data.
    func testBackupWhileServing() throws {
        let server = try TestServer.start()
        defer { server.stop() }
        let tenant = try server.createTenant()
        let client = try HTTPClient(port: server.port, timeoutSeconds: 5)
        for i in 0..<25 {
            let response = try client.send(
                "PUT", "/v1/subscribers/user-\(i)", json: ["email": "u\(i)@example.com"], headers: tenant.backend)
            XCTAssertEqual(response.status, 201, response.text)
        }
        let subscriber = newAnonymousID()
        XCTAssertEqual(
            try client.send(
                "POST", "/v1/events", json: eventBatch(subscriberId: subscriber, count: 40), headers: tenant.app
            ).status, 200)

        let destination = path("backups/copy.sqlite")
        let backup = try runBuzzkit(["backup", destination, "--database", server.databasePath])
        XCTAssertEqual(backup.status, 0, backup.stderr)
        XCTAssertTrue(backup.stdout.contains("backup written"), backup.stdout)
        XCTAssertEqual(try sqlite(destination, "PRAGMA integrity_check"), "ok")
        XCTAssertEqual(try sqlite(destination, "SELECT count(*) FROM subscribers WHERE id LIKE 'user-%'"), "25")
        XCTAssertEqual(try sqlite(destination, "SELECT count(*) FROM events"), "40")
        XCTAssertEqual(try sqlite(destination, "SELECT count(*) FROM tenants WHERE id = '\(tenant.id)'"), "1")

        // The server went on serving; a second backup never overwrites the first.
        XCTAssertEqual(try client.send("GET", "/v1/subscribers/user-3", headers: tenant.backend).status, 200)
        let again = try runBuzzkit(["backup", destination, "--database", server.databasePath])
        XCTAssertNotEqual(again.status, 0)
        XCTAssertTrue(again.stderr.contains("exists"), again.stderr)
        let missing = try runBuzzkit(["backup", path("other.sqlite"), "--database", path("nothing-here.sqlite")])
        XCTAssertNotEqual(missing.status, 0)
        XCTAssertFalse(
            FileManager.default.fileExists(atPath: path("nothing-here.sqlite")),
            "backup must not create an empty source")
    }

    /// `tenant create` offline prints keys that the server then accepts; `identity-hash` is HMAC-SHA256.
    func testTenantCreateAndIdentityHash() throws {
        let database = path("t/buzzkit.sqlite")
        let created = try runBuzzkit(["tenant", "create", "offline-co", "--database", database])
        XCTAssertEqual(created.status, 0, created.stderr)
        let json = try JSONSerialization.jsonObject(with: Data(created.stdout.utf8)) as? [String: Any]
        let secretKey = try XCTUnwrap(json?["secretKey"] as? String)
        let identitySecret = try XCTUnwrap(json?["identitySecret"] as? String)
        XCTAssertTrue(secretKey.hasPrefix("bk_secret_"))
        XCTAssertTrue((json?["clientKey"] as? String)?.hasPrefix("bk_client_") ?? false)
        XCTAssertEqual(
            try sqlite(
                database, "SELECT count(*) FROM api_keys WHERE hash = '\(secretKey)' OR display_prefix = '\(secretKey)'"
            ), "0", "keys are stored hashed")

        let server = try TestServer.start(databasePath: database)
        defer { server.stop() }
        let tenant = try HTTPClient(port: server.port, timeoutSeconds: 5).send(
            "GET", "/v1/tenant", headers: ["Authorization": "Bearer \(secretKey)"])
        XCTAssertEqual(tenant.status, 200, tenant.text)

        let hash = try runBuzzkit(["identity-hash", "--secret", identitySecret, "user-42"])
        XCTAssertEqual(hash.status, 0, hash.stderr)
        XCTAssertEqual(hash.stdout.trimmingCharacters(in: .whitespacesAndNewlines).count, 64)
        // The server accepts that hash on identify.
        let identify = try HTTPClient(port: server.port, timeoutSeconds: 5).send(
            "POST", "/v1/identify",
            json: [
                "externalId": "user-42", "identityHash": hash.stdout.trimmingCharacters(in: .whitespacesAndNewlines),
            ],
            headers: ["Authorization": "Bearer \(json?["clientKey"] as? String ?? "")"])
        XCTAssertTrue([200, 201].contains(identify.status), identify.text)
    }

    /// A port already in use: a clear error, a non-zero exit, and the database closed cleanly.
    func testServeOnAPortInUseFailsCleanly() throws {
        let server = try TestServer.start()
        defer { server.stop() }
        let database = path("busy/buzzkit.sqlite")
        let result = try runBuzzkit(["serve", "--port", String(server.port), "--database", database], timeout: 10)
        XCTAssertEqual(result.status, 1)
        XCTAssertTrue(result.stderr.contains("in use"), result.stderr)
        XCTAssertFalse(result.stdout.contains("listening on"))
        XCTAssertFalse(FileManager.default.fileExists(atPath: database + "-wal"), "store left open on a failed start")
        XCTAssertEqual(try sqlite(database, "PRAGMA integrity_check"), "ok")
        // The server that holds the port is unaffected.
        XCTAssertEqual(try HTTPClient(port: server.port, timeoutSeconds: 5).send("GET", "/healthz").status, 200)
    }

    func testBadInvocationsFailWithAMessage() throws {
        let unknown = try runBuzzkit(["frobnicate"])
        XCTAssertEqual(unknown.status, 2)
        XCTAssertTrue(unknown.stderr.contains("usage"), unknown.stderr)
        let badPort = try runBuzzkit(["serve", "--port", "70000", "--database", path("p.sqlite")])
        XCTAssertEqual(badPort.status, 2)
        XCTAssertTrue(badPort.stderr.contains("--port"), badPort.stderr)
        let missingConfig = try runBuzzkit([
            "serve", "--port", "0", "--database", path("p.sqlite"), "--config", path("absent.json"),
        ])
        XCTAssertNotEqual(missingConfig.status, 0)
        XCTAssertTrue(missingConfig.stderr.contains("absent.json"), missingConfig.stderr)
        try Data("{\"maxBodyBytes\": \"big\"}".utf8).write(to: URL(fileURLWithPath: path("bad.json")))
        let badConfig = try runBuzzkit([
            "serve", "--port", "0", "--database", path("p.sqlite"), "--config", path("bad.json"),
        ])
        XCTAssertNotEqual(badConfig.status, 0)
        XCTAssertTrue(badConfig.stderr.contains("maxBodyBytes"), badConfig.stderr)
    }
}

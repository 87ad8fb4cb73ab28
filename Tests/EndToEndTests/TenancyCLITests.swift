import Foundation
import Postgres
import TestSupport
import Testing

/// `buzzkit tenant create` and `buzzkit identity-hash` against `buzzkit serve` on the same database.
@Suite struct TenancyCLITests {
    /// Runs the built `buzzkit` with `arguments`; returns its exit status and standard output.
    private func buzzkit(_ arguments: [String], environment: [String: String] = [:]) throws -> (
        status: Int32, output: String
    ) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: TestServer.binaryPath)
        process.arguments = arguments
        var env = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("BUZZKIT_") }
        for (name, value) in environment { env[name] = value }
        process.environment = env
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: data, as: UTF8.self))
    }

    /// A fresh database: a SQLite path in a new folder, or a new PostgreSQL database's URL
    /// (`postgres` keeps it alive; it is dropped when released).
    private func temporaryDatabase(_ store: StoreKind = .sqlite) throws -> (
        directory: URL, path: String, postgres: PostgresTestDatabase?
    ) {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "buzzkit-cli-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        if store == .postgres, let database = try PostgresTestDatabase.make() {
            return (directory, database.url, database)
        }
        return (directory, directory.appendingPathComponent("data/buzzkit.sqlite").path, nil)
    }

    /// `tenant create` output: `{tenant: {id, name}, secretKey, clientKey, identitySecret}`.
    private func createTenant(_ name: String, database: String, environment: [String: String] = [:]) throws -> (
        TestTenant, String
    ) {
        let (status, output) = try buzzkit(
            ["tenant", "create", name, "--database", database], environment: environment)
        #expect(status == 0, "\(output)")
        let json = try #require(try JSONSerialization.jsonObject(with: Data(output.utf8)) as? [String: Any])
        let tenant = try #require(json["tenant"] as? [String: Any])
        let created = try TestTenant(tenantCreateOutput: output)
        return (created, try #require(tenant["name"] as? String))
    }

    @Test(arguments: StoreKind.available) func createdTenantsKeysWorkAgainstTheServer(_ store: StoreKind) throws {
        let (directory, database, postgres) = try temporaryDatabase(store)
        defer { try? FileManager.default.removeItem(at: directory) }
        let (tenant, name) = try createTenant("acme", database: database)
        #expect(name == "acme")
        #expect(tenant.secretKey.hasPrefix("bk_secret_") && tenant.clientKey.hasPrefix("bk_client_"))
        #expect(tenant.identitySecret.hasPrefix("bk_isec_"))
        let (second, _) = try createTenant("globex", database: database)
        #expect(second.id != tenant.id)

        let server = try TestServer.start(databasePath: database)
        defer { server.stop() }
        let client = try HTTPClient(port: server.port)
        let view = try client.send("GET", "/v1/tenant", headers: tenant.backend)
        #expect(view.status == 200, "\(view.text)")
        #expect((view.data?["tenant"] as? [String: Any])?["id"] as? String == tenant.id)
        #expect((view.data?["tenant"] as? [String: Any])?["name"] as? String == "acme")

        // The printed identity secret makes hashes the server accepts, through `identity-hash` too.
        let (status, printed) = try buzzkit(["identity-hash", "--secret", tenant.identitySecret, "user_42"])
        #expect(status == 0)
        let hash = printed.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(hash == tenant.identityHash("user_42"))
        let identify = try client.send(
            "POST", "/v1/identify", json: ["externalId": "user_42", "identityHash": hash], headers: tenant.app)
        #expect(identify.status == 200, "\(identify.text)")
        #expect((identify.data?["subscriber"] as? [String: Any])?["verified"] as? Bool == true)

        // The other tenant does not see it.
        let elsewhere = try client.send("GET", "/v1/subscribers/user_42", headers: second.backend)
        #expect(elsewhere.status == 404)
        server.stop()

        // Keys are stored hashed: none appears anywhere in the database.
        if postgres != nil {
            let db = try Connection(url: database)
            let everything = try db.queryOne(
                "SELECT string_agg(hash || id || display_prefix, ' ') FROM api_keys")!.string(0)
            for key in [tenant.secretKey, tenant.clientKey, second.secretKey, second.clientKey] {
                #expect(!everything.contains(key), "api_keys holds a key in clear")
            }
        }
        for file in [database, database + "-wal"] where postgres == nil {
            guard let bytes = FileManager.default.contents(atPath: file) else { continue }
            for key in [tenant.secretKey, tenant.clientKey, second.secretKey, second.clientKey] {
                #expect(bytes.range(of: Data(key.utf8)) == nil, "\(file) holds a key in clear")
            }
        }
    }

    @Test(arguments: StoreKind.available) func tenantCreateUsesTheBootstrapWorkspace(_ store: StoreKind) throws {
        let (directory, database, postgres) = try temporaryDatabase(store)
        defer { postgres?.drop() }
        defer { try? FileManager.default.removeItem(at: directory) }
        let workspaceKey = "bk_ws_" + randomAlphanumerics(32)
        let (tenant, _) = try createTenant(
            "acme", database: database, environment: ["BUZZKIT_BOOTSTRAP_WORKSPACE_KEY": workspaceKey])
        let server = try TestServer.start(databasePath: database, workspaceKey: workspaceKey)
        defer { server.stop() }
        let client = try HTTPClient(port: server.port)
        let view = try client.send(
            "GET", "/v1/tenant", headers: ["Authorization": "Bearer \(workspaceKey)", "BuzzKit-Tenant": tenant.id])
        #expect(view.status == 200, "\(view.text)")
    }

    @Test func identityHashMatchesAnIndependentImplementation() throws {
        // python3 -c "import hmac,hashlib;print(hmac.new(b'bk_isec_0123456789abcdefghijABCDEFGHIJklmnopqrstuvw',b'user_42',hashlib.sha256).hexdigest())"
        let (status, output) = try buzzkit([
            "identity-hash", "--secret", "bk_isec_0123456789abcdefghijABCDEFGHIJklmnopqrstuvw", "user_42",
        ])
        #expect(status == 0)
        #expect(output == "3b75d5ecc1351e19c877a7384b24f8081ebdac5d43e80ea17ca6fe8efd1d46a6\n")
        // Non-Latin ids hash their UTF-8.
        // python3 -c "import hmac,hashlib;print(hmac.new(b'secret','用户'.encode(),hashlib.sha256).hexdigest())"
        let unicode = try buzzkit(["identity-hash", "--secret", "secret", "用户"])
        #expect(unicode.output == "0f8feca2d3fff5a8f61799bf02a3bf1a100122642c6032c7a351ba41c1d6a62a\n")
        #expect(try buzzkit(["identity-hash", "user_42"]).status == 2)
    }
}

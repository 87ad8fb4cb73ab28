import Foundation
import TestSupport
import Testing

/// `buzzkit copy --from DB --to DB` (API.md §11): a database built through the API reads the
/// same through every endpoint after the copy, and its keys keep working.
@Suite struct StoreCopyTests {
    /// What the checks need from the populated source: each tenant's keys and every id to read.
    struct Fixture {
        var tenants: [TestTenant]
        var workspaceKey: String
        var issuedSecretKey: String
        var revokedSecretKey: String
        var ids: [String]
    }

    /// Builds a source through the API: two tenants, settings, a rotated secret, issued and
    /// revoked keys, a rename, an absorb and a link, 1,500+ events (more than a copy batch),
    /// push subscriptions, preferences, devices and a deleted subscriber.
    func populate(_ server: TestServer) throws -> Fixture {
        let s = try IdentitySession(server)
        let anon1 = newAnonymousID()
        let anon2 = newAnonymousID()
        let anon3 = newAnonymousID()
        try s.sendEvents(anon1, (0..<3).map { makeEvent("a1-\($0)", properties: ["n": $0]) })
        let push: JSONDict = [
            "token": "tok-1", "platform": "ios", "permission": "authorized",
            "device": ["platform": "ios", "appVersion": "1.2", "osVersion": "17.1", "model": "iPhone15,2"],
        ]
        try expectStatus(200, s.app("PUT", "/v1/subscribers/\(anon1)/push-subscriptions/phone-1", push))
        try expectStatus(200, s.app("PUT", "/v1/subscribers/\(anon1)/preferences", ["topics": ["news": false]]))
        // Rename, verified: the anonymous row becomes ada.
        try expectStatus(
            200,
            s.identify([
                "externalId": "ada", "anonymousId": anon1, "identityHash": try s.identityHash("ada"),
                "email": "ada@example.com", "attributes": ["plan": "pro"],
            ]))
        for batch in 0..<3 {
            let events = (0..<500).map { makeEvent("bulk-\(batch)-\($0)", "screen_view") }
            // ada is verified now: the backend sends, needing no proof.
            try expectStatus(200, s.backend("POST", "/v1/events", ["subscriberId": "ada", "events": events]))
        }
        try expectStatus(200, s.backend("PATCH", "/v1/subscribers/ada/attributes", ["attributes": ["streak": 4]]))

        // Absorb: bob exists, a second device's anonymous history joins him.
        try expectStatus(201, s.backend("PUT", "/v1/subscribers/bob", ["attributes": ["tier": "gold", "drop": 1]]))
        try s.sendEvents(anon2, [makeEvent("a2-0", "$session.start"), makeEvent("a2-1", properties: ["x": [1, 2]])])
        try expectStatus(
            200,
            s.app(
                "PUT", "/v1/subscribers/\(anon2)/push-subscriptions/tablet", ["token": "tok-2", "platform": "android"]))
        try expectStatus(
            200, s.app("PUT", "/v1/subscribers/\(anon2)/preferences", ["topics": ["news": true, "tips": false]]))
        try expectStatus(200, s.backend("PATCH", "/v1/subscribers/bob/attributes", ["attributes": ["drop": NSNull()]]))
        let absorb = try s.identify(["externalId": "bob", "anonymousId": anon2, "attributes": ["lang": "fr"]])
        #expect(absorb.mergeShape == "absorb", "\(absorb.text)")
        // Link: cy's anonymous id was never seen.
        let link = try s.identify(["externalId": "cy", "anonymousId": anon3])
        #expect(link.mergeShape == "link", "\(link.text)")
        try s.sendEvents(anon3, [makeEvent("a3-0")])
        // A deleted subscriber leaves a gap in the internal keys.
        try expectStatus(201, s.backend("PUT", "/v1/subscribers/gone", ["email": "gone@example.com"]))
        try expectStatus(200, s.backend("DELETE", "/v1/subscribers/gone"))
        try s.settings(["protectedAttributes": ["plan"], "requireVerification": false, "blockedExternalIds": ["test"]])
        try expectStatus(200, s.backend("POST", "/v1/tenant/identity-secret/rotate"))

        let issued = try s.backend("POST", "/v1/keys", ["kind": "secret"])
        let revoked = try s.backend("POST", "/v1/keys", ["kind": "secret"])
        let revokedID = try #require((revoked.data?["key"] as? JSONDict)?.string("id"))
        try expectStatus(200, s.backend("DELETE", "/v1/keys/\(revokedID)"))

        let other = try IdentitySession(server)
        try other.sendEvents("ada", [makeEvent("elsewhere")])
        try expectStatus(200, other.identify(["externalId": "zoe", "anonymousId": newAnonymousID()]))
        return Fixture(
            tenants: [s.tenant, other.tenant], workspaceKey: server.workspaceKey,
            issuedSecretKey: try #require(issued.data?.string("apiKey")),
            revokedSecretKey: try #require(revoked.data?.string("apiKey")),
            ids: ["ada", "bob", "cy", anon1, anon2, anon3, "gone", "zoe", "nobody"])
    }

    /// Everything a backend can read of each tenant, as JSON text with sorted keys, so two
    /// servers compare with one `==`; only the 24-hour call count, which is not copied, is left out.
    func readEverything(_ port: Int, _ fixture: Fixture) throws -> [String] {
        let client = try HTTPClient(port: port)
        var pages: [String] = []
        func read(_ path: String, _ tenant: TestTenant) throws {
            let response = try client.send("GET", path, headers: tenant.backend)
            var page: JSONDict = ["status": response.status, "data": response.data ?? NSNull()]
            if let from = response.metadata?["resolvedFrom"] { page["resolvedFrom"] = from }
            if var data = response.data, var view = data["tenant"] as? JSONDict {
                view["stats"] = (view["stats"] as? JSONDict)?.filter { $0.key != "unverifiedAppCalls24h" }
                data["tenant"] = view
                page["data"] = data
            }
            let text = try JSONSerialization.data(withJSONObject: page, options: [.sortedKeys])
            pages.append("GET \(path): " + String(decoding: text, as: UTF8.self))
        }
        for tenant in fixture.tenants {
            for path in ["/v1/tenant", "/v1/tenant/identity-secret", "/v1/keys", "/v1/subscribers?limit=1000"] {
                try read(path, tenant)
            }
            for id in fixture.ids {
                try read("/v1/subscribers/\(pathID(id))", tenant)
                try read("/v1/subscribers/\(pathID(id))/events?limit=1000", tenant)
                try read("/v1/subscribers/\(pathID(id))/events?after=1000&limit=1000", tenant)
            }
        }
        return pages
    }

    /// The keys of the source authenticate (or stay revoked) on `port`.
    func expectKeysWork(_ port: Int, _ fixture: Fixture) throws {
        let client = try HTTPClient(port: port)
        let tenant = fixture.tenants[0]
        #expect(try client.send("GET", "/v1/tenant", headers: tenant.backend).status == 200)
        #expect(
            try client.send("GET", "/v1/tenant", headers: ["Authorization": "Bearer \(fixture.issuedSecretKey)"]).status
                == 200)
        let revoked = try client.send(
            "GET", "/v1/tenant", headers: ["Authorization": "Bearer \(fixture.revokedSecretKey)"])
        #expect(revoked.status == 401, "a revoked key stays revoked: \(revoked.text)")
        let workspace = try client.send(
            "GET", "/v1/tenant",
            headers: ["Authorization": "Bearer \(fixture.workspaceKey)", "BuzzKit-Tenant": tenant.id])
        #expect(workspace.status == 200, "\(workspace.text)")
        let app = try client.send(
            "POST", "/v1/events", json: ["subscriberId": "bob", "events": [makeEvent("after-copy")]],
            headers: tenant.app)
        #expect(app.status == 200, "\(app.text)")
    }

    /// Copies `from` into `to` with the binary; fails the test unless it succeeds.
    @discardableResult
    func copy(_ from: String, _ to: String) throws -> CommandResult {
        let result = try runBuzzkit(["copy", "--from", from, "--to", to], timeout: 120)
        // Stop here when it failed: every later comparison would fail too, and say less.
        try #require(result.status == 0, "copy \(from) → \(to): \(result.stdout) \(result.stderr)")
        return result
    }

    func temporaryDirectory() throws -> URL {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "buzzkit-copy-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        return directory
    }

    @Test func sqliteToSQLiteWhileTheSourceIsServed() throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let source = try TestServer.start()
        defer { source.stop() }
        let fixture = try populate(source)
        let before = try readEverything(source.port, fixture)

        let target = directory.appendingPathComponent("copy/buzzkit.sqlite").path
        let result = try copy(source.databasePath, target)
        // One line per kind, with the counts the API implies: ada 1,504 events, bob 3 (2 absorbed, the
        // merge), cy 2, the other tenant 2; the absorbed anonymous row is retired and not copied.
        #expect(result.stdout.contains("tenants: 2\n"), "\(result.stdout)")
        #expect(result.stdout.contains("events: 1511\n"), "\(result.stdout)")
        #expect(result.stdout.contains("push subscriptions: 2\n"), "\(result.stdout)")
        #expect(result.stdout.contains("every count matches"), "\(result.stdout)")

        let copied = try TestServer.start(databasePath: target)
        defer { copied.stop() }
        let after = try readEverything(copied.port, fixture)
        #expect(after.count == before.count)
        for (a, b) in zip(before, after) { #expect(a == b) }
        try expectKeysWork(copied.port, fixture)
    }

    /// SQLite → PostgreSQL → SQLite, the source served meanwhile; a server on each copy reads the
    /// same as the source, and every key works on both.
    @Test(.enabled(if: PostgresTestDatabase.isAvailable, "needs BUZZKIT_TEST_POSTGRES_URL"))
    func sqliteToPostgresAndBack() throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let postgres = try #require(try PostgresTestDatabase.make())
        defer { postgres.drop() }
        let source = try TestServer.start()
        defer { source.stop() }
        let fixture = try populate(source)
        let before = try readEverything(source.port, fixture)

        let toPostgres = try copy(source.databasePath, postgres.url)
        #expect(toPostgres.stdout.contains("events: 1511\n"), "\(toPostgres.stdout)")
        let onPostgres = try TestServer.start(databasePath: postgres.url)
        let fromPostgres = try readEverything(onPostgres.port, fixture)
        #expect(fromPostgres.count == before.count)
        for (a, b) in zip(before, fromPostgres) { #expect(a == b) }
        onPostgres.stop()

        // Back to SQLite, from PostgreSQL while a server is on it.
        let served = try TestServer.start(databasePath: postgres.url)
        defer { served.stop() }
        let back = directory.appendingPathComponent("back.sqlite").path
        let toSQLite = try copy(postgres.url, back)
        #expect(toSQLite.stdout.contains("every count matches"), "\(toSQLite.stdout)")
        try expectKeysWork(served.port, fixture)
        let onSQLite = try TestServer.start(databasePath: back)
        defer { onSQLite.stop() }
        let after = try readEverything(onSQLite.port, fixture)
        #expect(after.count == before.count)
        for (a, b) in zip(before, after) { #expect(a == b) }
        try expectKeysWork(onSQLite.port, fixture)

        // A PostgreSQL target holding a tenant is refused too.
        let refused = try runBuzzkit(["copy", "--from", back, "--to", postgres.url])
        #expect(refused.status != 0)
        #expect(refused.stderr.contains("already holds tenants"), "\(refused.stderr)")
    }

    @Test func aTargetHoldingATenantIsRefusedAndLeftAsItWas() throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let source = directory.appendingPathComponent("source.sqlite").path
        let target = directory.appendingPathComponent("target.sqlite").path
        for path in [source, target] {
            #expect(
                try runBuzzkit(["tenant", "create", "t-\(randomAlphanumerics(4))", "--database", path]).status == 0)
        }
        let dump = "SELECT group_concat(id || ':' || name) FROM (SELECT id, name FROM tenants ORDER BY id)"
        let keysBefore = try sqlite(target, "SELECT count(*) FROM api_keys")
        let tenantsBefore = try sqlite(target, dump)

        let refused = try runBuzzkit(["copy", "--from", source, "--to", target])
        #expect(refused.status != 0)
        #expect(refused.stderr.contains("already holds tenants"), "\(refused.stderr)")
        #expect(try sqlite(target, dump) == tenantsBefore)
        #expect(try sqlite(target, "SELECT count(*) FROM api_keys") == keysBefore)

        // A freshly migrated target is fine.
        let fresh = directory.appendingPathComponent("fresh.sqlite").path
        #expect(try runBuzzkit(["migrate", "--database", fresh]).status == 0)
        try copy(source, fresh)
        #expect(try sqlite(fresh, dump) == (try sqlite(source, dump)))
    }
}

/// Fails the test unless `response` has `status`.
private func expectStatus(
    _ status: Int, _ response: HTTPClient.Response, sourceLocation: SourceLocation = #_sourceLocation
) {
    #expect(response.status == status, "\(response.text)", sourceLocation: sourceLocation)
}

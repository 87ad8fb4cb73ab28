import Foundation
import SQLite
import Storage
import TestSupport
import Testing

/// API.md §5 and §6: `maxAliases` caps a person's ids, and a write to a big person costs the
/// writer what a write to a new one costs.
@Suite struct FanOutLimitTests {
    private func anonymousID(_ n: Int) -> String { "anon_" + String(format: "%021d", n) }
    /// The anonymous id of the person's own device: `anon_big0000…`.
    private static func deviceID(of person: String) -> String {
        "anon_" + String((person + String(repeating: "0", count: 21)).prefix(21))
    }

    @Test(arguments: StoreKind.available) func maxAliasesIsASettingWithItsDefault(_ store: StoreKind) throws {
        let app = try InProcessApp(store: store)
        defer { app.close() }
        let tenant = try app.createTenant()
        let settings = try app.send("GET", "/v1/tenant", headers: tenant.backend)
        #expect(settings.tenant?["maxAliases"] as? Int == 1000)
        for bad: Any in [0, 100_001, "10", 2.5] {
            expectError(
                try app.send("PATCH", "/v1/tenant", json: ["maxAliases": bad], headers: tenant.backend), 400,
                "invalid_request")
        }
        let patched = try app.send("PATCH", "/v1/tenant", json: ["maxAliases": 3], headers: tenant.backend)
        expectOK(patched)
        #expect(patched.tenant?["maxAliases"] as? Int == 3)
    }

    @Test(arguments: StoreKind.available) func mergesPastTheCapAreRefusedAndCounted(_ store: StoreKind) throws {
        let app = try InProcessApp(store: store)
        defer { app.close() }
        let tenant = try app.createTenant()
        expectOK(try app.send("PATCH", "/v1/tenant", json: ["maxAliases": 3], headers: tenant.backend))
        func identify(_ anon: String) throws -> HTTPClient.Response {
            try app.send("POST", "/v1/identify", json: ["externalId": "ada", "anonymousId": anon], headers: tenant.app)
        }
        // A known anonymous subscriber (rename: 2 ids), then a never-seen one (link: 3 ids).
        expectOK(
            try app.send(
                "PATCH", "/v1/subscribers/\(anonymousID(1))/attributes", json: ["attributes": ["a": 1]],
                headers: tenant.app))
        #expect(try identify(anonymousID(1)).data?["merge"] as? [String: Any] != nil)
        let linked = try identify(anonymousID(2))
        #expect((linked.data?["merge"] as? [String: Any])?["shape"] as? String == "link")

        // A fourth id, never seen: no link; identify still succeeds, with the warning.
        let refusedLink = try identify(anonymousID(3))
        expectOK(refusedLink)
        #expect(refusedLink.warnings == ["alias_limit_reached"])
        #expect((refusedLink.data?["merge"] as? [String: Any])?["shape"] as? String == "none")
        #expect((refusedLink.subscriber?["aliases"] as? [String])?.count == 2)
        expectError(
            try app.send("GET", "/v1/subscribers/\(anonymousID(3))", headers: tenant.backend), 404,
            "subscriber_not_found")

        // An anonymous subscriber with an event: no absorb either; it stays its own subscriber.
        let events: [String: Any] = ["subscriberId": anonymousID(4), "events": [["id": "e1", "name": "open"]]]
        expectOK(try app.send("POST", "/v1/events", json: events, headers: tenant.app))
        #expect(try identify(anonymousID(4)).warnings == ["alias_limit_reached"])
        let stillAnonymous = try app.send("GET", "/v1/subscribers/\(anonymousID(4))", headers: tenant.backend)
        #expect(stillAnonymous.subscriber?["id"] as? String == anonymousID(4))

        // The backend's merge route answers the same refusal as an error, and changes nothing.
        expectError(
            try app.send(
                "POST", "/v1/subscribers/ada/merge", json: ["anonymousId": anonymousID(5)], headers: tenant.backend),
            409, "alias_limit_reached")
        let ada = try app.send("GET", "/v1/subscribers/ada", headers: tenant.backend)
        #expect((ada.subscriber?["aliases"] as? [String])?.sorted() == [anonymousID(1), anonymousID(2)])

        let metrics = try app.send("GET", "/metrics").text
        #expect(metrics.contains("buzzkit_merges_refused_total{reason=\"alias_limit_reached\"} 3"), "\(metrics)")
    }

    /// Seeds `externalID` straight in SQL with `aliases` ids and `events` events, as months of
    /// traffic would leave it.
    private func seed(_ app: InProcessApp, tenantID: String, externalID: String, aliases: Int, events: Int) throws {
        let db = try Database(path: app.database)
        defer { db.close() }
        try db.transaction {
            let key = try #require(
                try db.queryOne(
                    "SELECT subscriber_key FROM aliases WHERE tenant_id = ? AND alias = ?", [tenantID, externalID]
                )?.int(0))
            try db.execute(
                """
                WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?3)
                INSERT INTO aliases (tenant_id, alias, subscriber_key)
                SELECT ?1, 'anon_' || printf('%021d', i), ?2 FROM n
                """, [tenantID, key, aliases])
            try db.execute(
                """
                WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?2)
                INSERT INTO events (subscriber_key, seq, client_id, name, timestamp, received_at, properties)
                SELECT ?1, i, 'seed-' || i, 'open', 1700000000000, 1700000000000, NULL FROM n
                """, [key, events])
            try db.execute(
                "UPDATE subscribers SET last_seq = ?2, event_count = ?2 WHERE key = ?1", [key, events])
        }
    }

    @Test func aWriteToABigPersonCostsTheWriterWhatAFreshOneCosts() throws {
        let app = try InProcessApp()
        defer { app.close() }
        let tenant = try app.createTenant()
        for person in ["big", "fresh"] {
            expectOK(try app.send("PUT", "/v1/subscribers/\(person)", json: [:], headers: tenant.backend), 201)
        }
        try seed(app, tenantID: tenant.id, externalID: "big", aliases: 999, events: 100_000)

        /// Steps the writer's statements ran for the requests `body` sends (VM steps are exact,
        /// so the comparison does not depend on the machine's load).
        func writerSteps(_ body: () throws -> Void) throws -> Int {
            let before = try (app.store as! SQLiteIdentityStore).writer.write { db in db.cachedStatementSteps }
            try body()
            return try (app.store as! SQLiteIdentityStore).writer.write { db in db.cachedStatementSteps } - before
        }
        func writes(to person: String, round: Int) throws {
            // Not a merge: its alias count (bounded by maxAliases) is the one read that may scale.
            let calls: [(String, String, [String: Any])] = [
                ("POST", "/v1/identify", ["externalId": person, "attributes": ["plan": "pro\(round)"]]),
                ("POST", "/v1/identify", ["externalId": person, "anonymousId": Self.deviceID(of: person)]),
                ("PATCH", "/v1/subscribers/\(person)/attributes", ["attributes": ["streak": round]]),
                (
                    "POST", "/v1/events",
                    ["subscriberId": person, "events": [["id": "r\(round)", "name": "open"]]]
                ),
                (
                    "PUT", "/v1/subscribers/\(person)/push-subscriptions/dev-\(person)",
                    ["token": "tok-\(person)-\(round)", "platform": "ios"]
                ),
                ("PUT", "/v1/subscribers/\(person)/preferences", ["topics": ["news": round % 2 == 0]]),
            ]
            for (method, path, body) in calls {
                let response = try app.send(method, path, json: body, headers: tenant.app)
                #expect(response.status == 200, "\(method) \(path): \(response.text)")
            }
        }
        // A warm-up round each, so both sides run on prepared, cached statements.
        for person in ["fresh", "big"] {
            if person == "big" {
                expectOK(try app.send("PATCH", "/v1/tenant", json: ["maxAliases": 1001], headers: tenant.backend))
            }
            let link = ["externalId": person, "anonymousId": Self.deviceID(of: person)]
            #expect(try app.send("POST", "/v1/identify", json: link, headers: tenant.app).warnings.isEmpty)
            try writes(to: person, round: 0)
        }
        let fresh = try writerSteps { try writes(to: "fresh", round: 1) }
        let big = try writerSteps { try writes(to: "big", round: 1) }
        // Every call is the same index work whatever the person holds; identify's retry of a known
        // alias (every launch) is resolved by one probe.
        #expect(fresh > 0)
        #expect(big <= fresh + fresh / 4, "writer steps: big person \(big), fresh person \(fresh)")

        // And the answers still show the whole person, read after the commit.
        let answer = try app.send(
            "PATCH", "/v1/subscribers/big/attributes", json: ["attributes": ["x": 1]], headers: tenant.app)
        #expect((answer.subscriber?["aliases"] as? [String])?.count == 1000)
        #expect(answer.subscriber?["eventCount"] as? Int == 100_003)  // + 2 rounds + the link marker
    }
}

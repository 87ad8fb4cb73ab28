import Foundation
import Postgres
import SQLite
import TestSupport
import Testing

/// API.md §5: every item of `GET /v1/subscribers` is the subscriber of §4, and a damaged row is
/// a 500, never an item with made-up values or a shorter page.
@Suite struct ListItemsTests {
    @Test(arguments: StoreKind.available) func everyItemIsTheWholeSubscriber(_ store: StoreKind) throws {
        let app = try InProcessApp(store: store)
        defer { app.close() }
        let tenant = try app.createTenant()
        let anon = "anon_" + String(repeating: "L", count: 21)
        let calls: [(String, String, [String: Any])] = [
            ("PATCH", "/v1/subscribers/\(anon)/attributes", ["attributes": ["color": "blue"]]),
            ("POST", "/v1/identify", ["externalId": "ada", "anonymousId": anon, "email": "ada@example.com"]),
            ("PUT", "/v1/subscribers/ada/push-subscriptions/phone", ["token": "t1", "platform": "ios"]),
            ("PUT", "/v1/subscribers/ada/preferences", ["topics": ["news": false]]),
            (
                "POST", "/v1/identify",
                ["externalId": "bob", "device": ["deviceId": "pix", "model": "Pixel", "locale": "de_DE"]]
            ),
            ("PATCH", "/v1/subscribers/bob/attributes", ["attributes": ["plan": "pro", "n": 3]]),
            ("POST", "/v1/events", ["subscriberId": "bob", "events": [["id": "1", "name": "open"]]]),
        ]
        for (method, path, body) in calls {
            expectOK(try app.send(method, path, json: body, headers: tenant.app))
        }
        let list = try app.send("GET", "/v1/subscribers?limit=1", headers: tenant.backend)
        let next = try #require(list.data?["nextCursor"] as? String)
        let second = try app.send("GET", "/v1/subscribers?limit=1&cursor=\(next)", headers: tenant.backend)
        let items =
            (list.data?["subscribers"] as? [[String: Any]] ?? [])
            + (second.data?["subscribers"] as? [[String: Any]] ?? [])
        #expect(items.map { $0["id"] as? String } == ["ada", "bob"])
        for item in items {
            let id = try #require(item["id"] as? String)
            let one = try #require(try app.send("GET", "/v1/subscribers/\(id)", headers: tenant.backend).subscriber)
            #expect(NSDictionary(dictionary: item) == NSDictionary(dictionary: one), "\(id)")
            for field in ["attributes", "aliases", "pushSubscriptions", "preferences", "devices", "eventCount"] {
                #expect(item[field] != nil, "\(id).\(field)")
            }
        }
        #expect(items[0]["aliases"] as? [String] == [anon])
        #expect((items[0]["pushSubscriptions"] as? [[String: Any]])?.count == 1)
        #expect((items[1]["devices"] as? [[String: Any]])?.first?["model"] as? String == "Pixel")
        #expect(items[1]["eventCount"] as? Int == 1)
    }

    @Test func aDamagedRowIsAServerErrorNotADefault() throws {
        let app = try InProcessApp()
        defer { app.close() }
        let tenant = try app.createTenant()
        expectOK(try app.send("PUT", "/v1/subscribers/ada", json: [:], headers: tenant.backend), 201)
        expectOK(try app.send("PUT", "/v1/subscribers/bob", json: [:], headers: tenant.backend), 201)
        let db = try Database(path: app.database)
        defer { db.close() }
        try db.execute("UPDATE subscribers SET email_subscribed = 'no' WHERE id = 'bob'", [])
        expectError(try app.send("GET", "/v1/subscribers", headers: tenant.backend), 500, "internal_error")
        expectError(try app.send("GET", "/v1/subscribers/bob/events", headers: tenant.backend), 500, "internal_error")
        expectOK(try app.send("GET", "/v1/subscribers/ada", headers: tenant.backend))

        // An event whose stored properties no longer parse: the timeline is a 500, not `{}`.
        let events: [String: Any] = [
            "subscriberId": "ada", "events": [["id": "1", "name": "open", "properties": ["a": 1]]],
        ]
        expectOK(try app.send("POST", "/v1/events", json: events, headers: tenant.backend))
        expectOK(try app.send("GET", "/v1/subscribers/ada/events", headers: tenant.backend))
        try db.execute("UPDATE events SET properties = '{\"a\":' WHERE client_id = '1'", [])
        expectError(try app.send("GET", "/v1/subscribers/ada/events", headers: tenant.backend), 500, "internal_error")
    }

    /// The same on PostgreSQL, whose column types rule out a text boolean: damaged JSON instead.
    @Test(.enabled(if: PostgresTestDatabase.isAvailable, "BUZZKIT_TEST_POSTGRES_URL is not set"))
    func aDamagedPostgresRowIsAServerErrorNotADefault() throws {
        let app = try InProcessApp(store: .postgres)
        defer { app.close() }
        let tenant = try app.createTenant()
        expectOK(try app.send("PUT", "/v1/subscribers/ada", json: [:], headers: tenant.backend), 201)
        expectOK(
            try app.send("PUT", "/v1/subscribers/bob", json: ["attributes": ["plan": "pro"]], headers: tenant.backend),
            201)
        let events: [String: Any] = [
            "subscriberId": "ada", "events": [["id": "1", "name": "open", "properties": ["a": 1]]],
        ]
        expectOK(try app.send("POST", "/v1/events", json: events, headers: tenant.backend))
        let db = try Connection(url: app.database)
        try db.execute("UPDATE attributes SET value = '{\"plan\":' WHERE name = 'plan'", [])
        expectError(try app.send("GET", "/v1/subscribers", headers: tenant.backend), 500, "internal_error")
        expectError(try app.send("GET", "/v1/subscribers/bob", headers: tenant.backend), 500, "internal_error")
        expectOK(try app.send("GET", "/v1/subscribers/ada", headers: tenant.backend))
        try db.execute("UPDATE events SET properties = '{\"a\":' WHERE client_id = '1'", [])
        expectError(try app.send("GET", "/v1/subscribers/ada/events", headers: tenant.backend), 500, "internal_error")
    }
}

import Foundation
import TestSupport
import Testing

/// `GET /v1/subscribers?order=newest`: the dashboard's list, newest first in keyset pages, with
/// the same filters as the default order and cursors that belong to their order, on every store.
@Suite struct SubscriberListOrderTests {
    /// A tenant holding, in creation order: identified `u0`…`u4` (u1 and u3 verified through a
    /// proof) interleaved with anonymous ones `a0`…`a4`.
    final class Fixture {
        let app: InProcessApp
        let tenant: TestTenant
        /// Every id in creation order.
        var created: [String] = []
        let verified: Set<String> = ["u1", "u3"]

        init(_ kind: StoreKind) throws {
            app = try InProcessApp(store: kind)
            tenant = try app.createTenant()
            for i in 0..<5 {
                let id = "u\(i)"
                var body: [String: Any] = ["externalId": id]
                if verified.contains(id) { body["identityHash"] = tenant.identityHash(id) }
                expectOK(try app.send("POST", "/v1/identify", json: body, headers: tenant.app))
                created.append(id)
                let anonymous = "anon_" + String(repeating: String(i), count: 21)
                let events =
                    ["subscriberId": anonymous, "events": [["id": "e\(i)", "name": "opened"]]] as [String: Any]
                expectOK(try app.send("POST", "/v1/events", json: events, headers: tenant.app))
                created.append(anonymous)
            }
        }
        deinit { app.close() }

        /// Every id the list gives, page by page, with the pages' sizes.
        func walk(_ query: String, limit: Int) throws -> (ids: [String], pages: [Int]) {
            var ids: [String] = []
            var pages: [Int] = []
            var cursor: String?
            repeat {
                var path = "/v1/subscribers?limit=\(limit)\(query)"
                if let cursor { path += "&cursor=\(cursor)" }
                let response = try app.send("GET", path, headers: tenant.backend)
                expectOK(response)
                let page = try #require(response.data?["subscribers"] as? [[String: Any]])
                ids += page.compactMap { $0["id"] as? String }
                pages.append(page.count)
                cursor = response.data?["nextCursor"] as? String
                #expect(pages.count <= created.count + 1, "the cursor never ends")
            } while cursor != nil
            return (ids, pages)
        }
    }

    @Test(arguments: StoreKind.available)
    func newestFirstIsTheReverseOfCreationOrderAcrossPages(_ kind: StoreKind) throws {
        let f = try Fixture(kind)
        let (ids, pages) = try f.walk("&order=newest", limit: 3)
        #expect(ids == f.created.reversed())
        #expect(pages == [3, 3, 3, 1])
        // The default stays oldest first.
        #expect(try f.walk("", limit: 4).ids == f.created)
        #expect(try f.walk("&order=oldest", limit: 4).ids == f.created)
    }

    @Test(arguments: StoreKind.available)
    func filtersKeepTheOrder(_ kind: StoreKind) throws {
        let f = try Fixture(kind)
        let anonymous = f.created.filter { $0.hasPrefix("anon_") }
        let identified = f.created.filter { !$0.hasPrefix("anon_") }
        #expect(try f.walk("&order=newest&anonymous=true", limit: 2).ids == anonymous.reversed())
        #expect(try f.walk("&order=newest&anonymous=false", limit: 2).ids == identified.reversed())
        #expect(try f.walk("&order=newest&verified=true", limit: 1).ids == ["u3", "u1"])
        #expect(
            try f.walk("&order=newest&verified=false", limit: 3).ids
                == f.created.filter { !f.verified.contains($0) }.reversed())
        #expect(try f.walk("&order=newest&anonymous=false&verified=true", limit: 5).ids == ["u3", "u1"])
        #expect(try f.walk("&order=newest&anonymous=true&verified=true", limit: 5).ids == [])
        #expect(try f.walk("&verified=true", limit: 1).ids == ["u1", "u3"])
    }

    @Test func aCursorBelongsToItsOrder() throws {
        let f = try Fixture(.sqlite)
        let newest = try f.app.send("GET", "/v1/subscribers?order=newest&limit=2", headers: f.tenant.backend)
        let newestCursor = try #require(newest.data?["nextCursor"] as? String)
        let oldest = try f.app.send("GET", "/v1/subscribers?limit=2", headers: f.tenant.backend)
        let oldestCursor = try #require(oldest.data?["nextCursor"] as? String)
        expectError(
            try f.app.send("GET", "/v1/subscribers?cursor=\(newestCursor)", headers: f.tenant.backend), 400,
            "invalid_request")
        expectError(
            try f.app.send("GET", "/v1/subscribers?order=newest&cursor=\(oldestCursor)", headers: f.tenant.backend),
            400, "invalid_request")
        expectError(
            try f.app.send("GET", "/v1/subscribers?order=latest", headers: f.tenant.backend), 400, "invalid_request")
    }

    @Test(arguments: StoreKind.available)
    func subscriberShowsWhoSetEachAttribute(_ kind: StoreKind) throws {
        let f = try Fixture(kind)
        expectOK(
            try f.app.send(
                "PUT", "/v1/subscribers/u0", json: ["attributes": ["plan": "pro"]], headers: f.tenant.backend))
        expectOK(
            try f.app.send(
                "PATCH", "/v1/subscribers/u0/attributes", json: ["attributes": ["theme": "dark"]], headers: f.tenant.app
            ))
        let subscriber = try #require(
            try f.app.send("GET", "/v1/subscribers/u0", headers: f.tenant.backend).subscriber)
        let sources = try #require(subscriber["attributeSources"] as? [String: String])
        #expect(sources == ["plan": "backend", "theme": "app"])
        #expect(Set((subscriber["attributes"] as? [String: Any] ?? [:]).keys) == Set(sources.keys))
    }
}

import Identity
import TestSupport
import Testing

/// `GET /v1/subscribers/{id}` answers from the store's snapshot cache. Every write route runs
/// right after the subscribers it touches were read (so cached); the next read must then equal an
/// uncached read of the database, for every id involved, including the ones a merge retired.
@Suite struct SnapshotCacheCoherenceTests {
    /// On PostgreSQL there is no cache, but `snapshot` is its own one-statement read: it must
    /// equal the table-by-table read just the same.
    @Test(arguments: StoreKind.available) func everyWriteIsSeenByTheNextRead(_ store: StoreKind) throws {
        let suite = try TenantSuite(store)
        let (app, tenant) = (suite.app, suite.tenant)
        let (anonA, anonB, anonC) = (newAnonymousID(), newAnonymousID(), newAnonymousID())
        let ids = [anonA, anonB, anonC, "user-1", "user-2"]
        let writes: [(String, String, String, [String: Any], [String: String])] = [
            (
                "register a device", "PUT", "/v1/subscribers/\(anonA)/push-subscriptions/phone",
                ["token": "tok-1", "platform": "ios"], tenant.app
            ),
            ("choose topics", "PUT", "/v1/subscribers/\(anonA)/preferences", ["topics": ["news": false]], tenant.app),
            (
                "patch attributes", "PATCH", "/v1/subscribers/\(anonA)/attributes", ["attributes": ["plan": "free"]],
                tenant.app
            ),
            (
                "send events", "POST", "/v1/events",
                ["subscriberId": anonA, "events": [["id": "e1", "name": "open"]]], tenant.app
            ),
            ("identify: rename", "POST", "/v1/identify", ["externalId": "user-1", "anonymousId": anonA], tenant.app),
            ("backend upsert", "PUT", "/v1/subscribers/user-2", ["email": "two@example.com"], tenant.backend),
            (
                "a device moves", "PUT", "/v1/subscribers/user-2/push-subscriptions/phone",
                ["token": "tok-1", "platform": "ios"], tenant.app
            ),
            ("anonymous prefs", "PUT", "/v1/subscribers/\(anonB)/preferences", ["topics": ["news": true]], tenant.app),
            ("identify: absorb", "POST", "/v1/identify", ["externalId": "user-2", "anonymousId": anonB], tenant.app),
            (
                "anonymous attributes", "PATCH", "/v1/subscribers/\(anonC)/attributes", ["attributes": ["x": 1]],
                tenant.app
            ),
            ("backend merge", "POST", "/v1/subscribers/user-1/merge", ["anonymousId": anonC], tenant.backend),
            ("logout", "DELETE", "/v1/subscribers/user-2/push-subscriptions/phone", [:], tenant.app),
            ("backend attributes", "PUT", "/v1/subscribers/user-1", ["attributes": ["tier": "gold"]], tenant.backend),
            ("delete", "DELETE", "/v1/subscribers/user-1", [:], tenant.backend),
        ]
        var cachedAtLeastOnce = false
        var renderingUsed = false
        for (name, method, path, body, headers) in writes {
            for id in ids { _ = try app.send("GET", "/v1/subscribers/\(id)", headers: tenant.backend) }
            cachedAtLeastOnce =
                cachedAtLeastOnce || ids.contains { app.store.cachedSnapshot(tenantID: tenant.id, id: $0) != nil }
            let response = try app.send(method, path, json: body.isEmpty ? nil : body, headers: headers)
            #expect((200..<300).contains(response.status), "\(name): \(response.text)")
            for id in ids {
                // A GET answers from `cachedSnapshot` when it has a hit (`Application.dispatch`),
                // otherwise through `snapshot`: both must agree with the database.
                let hit = app.store.cachedSnapshot(tenantID: tenant.id, id: id)
                let served = try app.store.snapshot(tenantID: tenant.id, id: id)
                let stored = try app.store.readSnapshot(tenantID: tenant.id, id: id)
                #expect(
                    Self.same(served, stored),
                    "after \(name), \(id): cache \(String(describing: served?.record)) vs database \(String(describing: stored?.record))"
                )
                #expect(
                    hit == nil || Self.same(hit, stored),
                    "after \(name), \(id): hit \(String(describing: hit?.record)) vs database \(String(describing: stored?.record))"
                )
                // Over HTTP, twice: the second GET of a backend answers from the cache's kept
                // rendering once the first made one. Both must show the database's subscriber.
                for _ in 0..<2 {
                    try Self.expectShows(
                        try app.send("GET", "/v1/subscribers/\(id)", headers: tenant.backend), stored, asked: id,
                        "after \(name), \(id)")
                }
                renderingUsed = renderingUsed || app.store.cachedRendering(tenantID: tenant.id, id: id) != nil
            }
        }
        #expect(cachedAtLeastOnce || store == .postgres)
        #expect(renderingUsed || store == .postgres)
    }

    /// A GET's answer shows `stored` (nil: 404) as asked by `asked`, an alias when it is not the
    /// subscriber's own id (`resolvedFrom`).
    private static func expectShows(
        _ response: HTTPClient.Response, _ stored: SubscriberSnapshot?, asked: String, _ context: String
    ) throws {
        guard let stored else {
            #expect(response.status == 404, "\(context): \(response.text)")
            return
        }
        #expect(response.status == 200, "\(context): \(response.text)")
        let shown = try #require(response.data?["subscriber"] as? [String: Any], "\(context)")
        #expect(shown["id"] as? String == stored.record.id, "\(context)")
        #expect((shown["aliases"] as? [String])?.sorted() == stored.aliases.sorted(), "\(context)")
        #expect(
            Set((shown["attributes"] as? [String: Any])?.keys.map { $0 } ?? [])
                == Set(stored.attributes.map(\.name)), "\(context)")
        #expect((shown["pushSubscriptions"] as? [Any])?.count == stored.pushSubscriptions.count, "\(context)")
        let resolvedFrom = (response.json?["metadata"] as? [String: Any])?["resolvedFrom"] as? String
        #expect(resolvedFrom == (stored.record.id == asked ? nil : asked), "\(context)")
    }

    private static func same(_ a: SubscriberSnapshot?, _ b: SubscriberSnapshot?) -> Bool {
        guard let a, let b else { return a == nil && b == nil }
        return a.record == b.record && a.aliases == b.aliases && a.pushSubscriptions == b.pushSubscriptions
            && a.preferences == b.preferences && a.devices == b.devices
            && a.attributes.map(\.name) == b.attributes.map(\.name)
            && a.attributes.map(\.entry) == b.attributes.map(\.entry)
    }
}

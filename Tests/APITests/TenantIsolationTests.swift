import Foundation
import TestSupport
import Testing

/// A key of tenant A never reaches, changes or reveals anything of tenant B (API.md §1), on
/// every route. B is filled first; A then uses B's ids, device ids and tokens.
@Suite final class TenantIsolationTests {
    var app: InProcessApp
    var a: TestTenant
    var b: TestTenant
    /// B's anonymous subscriber, with two events.
    let anonB = newAnonymousID()

    init() throws {
        (app, a, b) = try Self.fixture(.sqlite, anonB: anonB)
    }

    /// Moves this test onto a fresh app over `store` (the SQLite one made by `init` is closed).
    func use(_ store: StoreKind) throws {
        guard store != .sqlite else { return }
        app.close()
        (app, a, b) = try Self.fixture(store, anonB: anonB)
    }

    /// An app with tenants A and B, B filled first.
    private static func fixture(_ store: StoreKind, anonB: String) throws -> (InProcessApp, TestTenant, TestTenant) {
        let app = try InProcessApp(store: store)
        let a = try app.createTenant(name: "a")
        let b = try app.createTenant(name: "b")
        // B: an identified user with attributes, events, a device, preferences; an anonymous one.
        expectOK(
            try app.send("PUT", "/v1/subscribers/user_1", json: ["attributes": ["plan": "pro"]], headers: b.backend),
            201)
        expectOK(
            try app.send(
                "POST", "/v1/events", json: ["subscriberId": "user_1", "events": [["id": "e1", "name": "opened"]]],
                headers: b.app))
        expectOK(
            try app.send(
                "PUT", "/v1/subscribers/user_1/push-subscriptions/dev_1", json: ["token": "tok_1", "platform": "ios"],
                headers: b.app))
        expectOK(
            try app.send("PUT", "/v1/subscribers/user_1/preferences", json: ["topics": ["news": true]], headers: b.app))
        expectOK(
            try app.send(
                "POST", "/v1/events",
                json: ["subscriberId": anonB, "events": [["id": "e1", "name": "a"], ["id": "e2", "name": "b"]]],
                headers: b.app))
        return (app, a, b)
    }
    deinit { app.close() }

    /// B's view of its own subscriber, to check nothing changed.
    func bView(_ id: String) throws -> [String: Any] {
        let response = try app.send("GET", "/v1/subscribers/\(id)", headers: b.backend)
        expectOK(response)
        return try #require(response.subscriber)
    }

    func snapshot() throws -> String {
        var parts: [String] = []
        for id in ["user_1", anonB] {
            var view = try bView(id)
            view["updatedAt"] = nil
            parts.append(
                String(
                    decoding: try JSONSerialization.data(withJSONObject: view, options: [.sortedKeys]), as: UTF8.self))
            let events = try app.send("GET", "/v1/subscribers/\(id)/events", headers: b.backend)
            parts.append(
                events.text.replacingOccurrences(of: #""requestId":"[^"]*""#, with: "", options: .regularExpression))
        }
        return parts.joined(separator: "\n")
    }

    @Test(arguments: StoreKind.available) func readsAnswerExactlyAsForAnIdThatDoesNotExist(_ store: StoreKind) throws {
        try use(store)
        let before = try snapshot()
        for headers in [a.backend, a.workspace(app.workspaceKey)] {
            for (existing, absent) in [("user_1", "user_never"), (anonB, newAnonymousID())] {
                let paths: [(String) -> String] = [{ "/v1/subscribers/\($0)" }, { "/v1/subscribers/\($0)/events" }]
                for path in paths {
                    let there = try app.send("GET", path(existing), headers: headers)
                    let nowhere = try app.send("GET", path(absent), headers: headers)
                    expectError(there, 404, "subscriber_not_found")
                    #expect(errorShape(there) == errorShape(nowhere))
                }
            }
        }
        #expect(try snapshot() == before)
    }

    @Test(arguments: StoreKind.available) func deleteAndMergeCannotReachTheOtherTenant(_ store: StoreKind) throws {
        try use(store)
        let before = try snapshot()
        let deleteThere = try app.send("DELETE", "/v1/subscribers/user_1", headers: a.backend)
        let deleteNowhere = try app.send("DELETE", "/v1/subscribers/user_never", headers: a.backend)
        expectError(deleteThere, 404, "subscriber_not_found")
        #expect(errorShape(deleteThere) == errorShape(deleteNowhere))
        let deleteAnon = try app.send("DELETE", "/v1/subscribers/\(anonB)", headers: a.backend)
        #expect(errorShape(deleteAnon) == errorShape(deleteNowhere))

        // Merging into B's user: as for a user that does not exist.
        let mergeThere = try app.send(
            "POST", "/v1/subscribers/user_1/merge", json: ["anonymousId": anonB], headers: a.backend)
        let mergeNowhere = try app.send(
            "POST", "/v1/subscribers/user_never/merge", json: ["anonymousId": anonB], headers: a.backend)
        expectError(mergeThere, 404, "subscriber_not_found")
        #expect(errorShape(mergeThere) == errorShape(mergeNowhere))

        // Merging B's anonymous id into A's own user: a never-seen id for A, so a link that moves nothing.
        expectOK(try app.send("PUT", "/v1/subscribers/user_a", json: [String: Any](), headers: a.backend), 201)
        let merged = try app.send(
            "POST", "/v1/subscribers/user_a/merge", json: ["anonymousId": anonB], headers: a.backend)
        expectOK(merged)
        let merge = try #require(merged.data?["merge"] as? [String: Any])
        #expect(merge["shape"] as? String == "link")
        #expect(merged.subscriber?["eventCount"] as? Int == 1)  // only the $subscriber.merged event
        #expect(try snapshot() == before)
        #expect(try bView(anonB)["anonymous"] as? Bool == true)
    }

    @Test(arguments: StoreKind.available) func listsShowOnlyTheirOwnTenant(_ store: StoreKind) throws {
        try use(store)
        expectOK(try app.send("PUT", "/v1/subscribers/user_a", json: [String: Any](), headers: a.backend), 201)
        for headers in [a.backend, a.workspace(app.workspaceKey)] {
            for query in ["", "?anonymous=true", "?anonymous=false", "?verified=false", "?limit=1000"] {
                let list = try app.send("GET", "/v1/subscribers\(query)", headers: headers)
                expectOK(list)
                let ids = (list.data?["subscribers"] as? [[String: Any]] ?? []).compactMap { $0["id"] as? String }
                #expect(!ids.contains("user_1") && !ids.contains(anonB), "\(query): \(ids)")
                if query.isEmpty { #expect(ids == ["user_a"]) }
            }
        }
        // A's counts know nothing of B's subscribers.
        let stats = try #require(
            try app.send("GET", "/v1/tenant", headers: a.backend).tenant?["stats"] as? [String: Any])
        #expect(stats["identifiedSubscribers"] as? Int == 1)
    }

    @Test(arguments: StoreKind.available) func writesWithTheOtherTenantsIdsMakeTheirOwnSubscribers(_ store: StoreKind)
        throws
    {
        try use(store)
        let before = try snapshot()
        // The backend upsert creates A's own user_1.
        let upsert = try app.send(
            "PUT", "/v1/subscribers/user_1", json: ["attributes": ["plan": "free"]], headers: a.backend)
        expectOK(upsert, 201)
        #expect((upsert.subscriber?["attributes"] as? [String: Any])?["plan"] as? String == "free")
        // App calls naming B's ids act on A's own subscribers.
        expectOK(
            try app.send("PATCH", "/v1/subscribers/user_1/attributes", json: ["attributes": ["x": 1]], headers: a.app))
        expectOK(
            try app.send("PATCH", "/v1/subscribers/\(anonB)/attributes", json: ["attributes": ["x": 1]], headers: a.app)
        )
        let ingest = try app.send(
            "POST", "/v1/events", json: ["subscriberId": anonB, "events": [["id": "e1", "name": "a"]]], headers: a.app)
        expectOK(ingest)
        #expect(ingest.data?["accepted"] as? Int == 1)  // not a duplicate of B's e1
        expectOK(
            try app.send("PUT", "/v1/subscribers/user_1/preferences", json: ["topics": ["news": false]], headers: a.app)
        )

        let anonInA = try app.send("GET", "/v1/subscribers/\(anonB)", headers: a.backend)
        expectOK(anonInA)
        #expect(anonInA.subscriber?["eventCount"] as? Int == 1)
        #expect(try snapshot() == before)
    }

    @Test(arguments: StoreKind.available) func identifyWithTheOtherTenantsAnonymousIdCreatesItsOwnSubscriber(
        _ store: StoreKind
    ) throws {
        try use(store)
        let before = try snapshot()
        let identify = try app.send(
            "POST", "/v1/identify", json: ["externalId": "user_1", "anonymousId": anonB], headers: a.app)
        expectOK(identify)
        let merge = try #require(identify.data?["merge"] as? [String: Any])
        #expect(merge["shape"] as? String == "link")
        #expect(identify.subscriber?["id"] as? String == "user_1")
        #expect((identify.subscriber?["attributes"] as? [String: Any])?["plan"] == nil)
        #expect((identify.subscriber?["pushSubscriptions"] as? [Any])?.isEmpty == true)
        #expect(identify.subscriber?["eventCount"] as? Int == 1)  // its own $subscriber.merged
        #expect(try snapshot() == before)
        #expect(try bView(anonB)["anonymous"] as? Bool == true)
    }

    @Test(arguments: StoreKind.available) func pushRegistrationsInOneTenantLeaveTheOtherAlone(_ store: StoreKind) throws
    {
        try use(store)
        let before = try snapshot()
        // Same device id and same token in A: B's registration stays where it is.
        let anonA = newAnonymousID()
        expectOK(
            try app.send(
                "PUT", "/v1/subscribers/\(anonA)/push-subscriptions/dev_1",
                json: ["token": "tok_1", "platform": "ios"],
                headers: a.app))
        expectOK(
            try app.send(
                "PUT", "/v1/subscribers/user_1/push-subscriptions/dev_1",
                json: ["token": "tok_1", "platform": "android"],
                headers: a.app))
        // Logging out B's device through A's key deletes nothing of B's.
        let logout = try app.send("DELETE", "/v1/subscribers/user_1/push-subscriptions/dev_1", headers: a.app)
        expectOK(logout)
        let logoutB = try app.send("DELETE", "/v1/subscribers/\(anonB)/push-subscriptions/dev_1", headers: a.backend)
        expectOK(logoutB)
        #expect(logoutB.data?["deleted"] as? Bool == false)
        #expect(try snapshot() == before)
        let push = try #require(try bView("user_1")["pushSubscriptions"] as? [[String: Any]])
        #expect(push.count == 1)
        #expect(push.first?["deviceId"] as? String == "dev_1")
        #expect(push.first?["token"] as? String == "tok_1")
        #expect(push.first?["platform"] as? String == "ios")
    }

    @Test(arguments: StoreKind.available) func tenantSettingsSecretsAndKeysStayApart(_ store: StoreKind) throws {
        try use(store)
        expectOK(try app.send("PATCH", "/v1/tenant", json: ["requireVerification": true], headers: a.backend))
        expectOK(try app.send("POST", "/v1/tenant/identity-secret/rotate", headers: a.backend))
        let bTenant = try #require(try app.send("GET", "/v1/tenant", headers: b.backend).tenant)
        #expect(bTenant["requireVerification"] as? Bool == false)
        let bSecret = try app.send("GET", "/v1/tenant/identity-secret", headers: b.backend)
        #expect(bSecret.data?["identitySecret"] as? String == b.identitySecret)
        #expect(bSecret.data?["previousExpiresAt"] == nil)

        // B's proofs mean nothing in A.
        let proofFromB = try app.send(
            "POST", "/v1/identify", json: ["externalId": "user_9", "identityHash": b.identityHash("user_9")],
            headers: a.app)
        expectError(proofFromB, 401, "invalid_identity_hash")

        // A cannot see or revoke B's keys.
        let bKeys = try #require(try app.send("GET", "/v1/keys", headers: b.backend).data?["keys"] as? [[String: Any]])
        let aKeys = try #require(try app.send("GET", "/v1/keys", headers: a.backend).data?["keys"] as? [[String: Any]])
        let bIDs = Set(bKeys.compactMap { $0["id"] as? String })
        #expect(bIDs.count == 2)
        #expect(Set(aKeys.compactMap { $0["id"] as? String }).isDisjoint(with: bIDs))
        for id in bIDs {
            let there = try app.send("DELETE", "/v1/keys/\(id)", headers: a.backend)
            expectError(there, 404, "not_found")
            #expect(errorShape(there) == errorShape(try app.send("DELETE", "/v1/keys/key_nothing", headers: a.backend)))
        }
        expectOK(try app.send("GET", "/v1/tenant", headers: b.backend))
        expectOK(
            try app.send(
                "POST", "/v1/events", json: ["subscriberId": anonB, "events": [["id": "e3", "name": "c"]]],
                headers: b.app))
    }

    @Test(arguments: StoreKind.available) func aTenantHeaderDoesNotMoveATenantKey(_ store: StoreKind) throws {
        try use(store)
        // Secret and client keys belong to one tenant; BuzzKit-Tenant naming another is ignored.
        var headers = a.backend
        headers["BuzzKit-Tenant"] = b.id
        expectError(try app.send("GET", "/v1/subscribers/user_1", headers: headers), 404, "subscriber_not_found")
        #expect(try app.send("GET", "/v1/tenant", headers: headers).tenant?["id"] as? String == a.id)
        var appHeaders = a.app
        appHeaders["BuzzKit-Tenant"] = b.id
        let before = try snapshot()
        expectOK(
            try app.send(
                "PATCH", "/v1/subscribers/user_1/attributes", json: ["attributes": ["plan": "x"]], headers: appHeaders))
        #expect(try snapshot() == before)
    }

    @Test(arguments: StoreKind.available) func keysTakenInTurnEachActAsThemselves(_ store: StoreKind) throws {
        try use(store)
        // The auth cache answers a repeated key from the one it found last: a key used after
        // another, or one that differs from the last only in its final byte, is looked up anew.
        var last = b.secretKey
        last.removeLast()
        last.append(b.secretKey.hasSuffix("x") ? "y" : "x")
        let forged = ["Authorization": "Bearer \(last)"]
        for _ in 0..<3 {
            expectOK(try app.send("GET", "/v1/subscribers/user_1", headers: b.backend))
            expectError(try app.send("GET", "/v1/subscribers/user_1", headers: forged), 401, "unauthorized")
            expectError(try app.send("GET", "/v1/subscribers/user_1", headers: a.backend), 404, "subscriber_not_found")
            #expect(try app.send("GET", "/v1/tenant", headers: b.backend).tenant?["id"] as? String == b.id)
            #expect(try app.send("GET", "/v1/tenant", headers: a.backend).tenant?["id"] as? String == a.id)
        }
    }
}

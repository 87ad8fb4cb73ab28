import Foundation
import TestSupport
import Testing

/// `GET` and `PATCH /v1/tenant` (API.md §5).
@Suite final class TenantSettingsTests {
    var app: InProcessApp
    var tenant: TestTenant

    init() throws {
        app = try InProcessApp()
        tenant = try app.createTenant(name: "acme")
    }
    deinit { app.close() }

    /// Moves this test onto a fresh app over `store`.
    func use(_ store: StoreKind) throws {
        guard store != .sqlite else { return }
        app.close()
        app = try InProcessApp(store: store)
        tenant = try app.createTenant(name: "acme")
    }

    func read() throws -> [String: Any] {
        let response = try app.send("GET", "/v1/tenant", headers: tenant.backend)
        expectOK(response)
        return try #require(response.tenant)
    }

    func patch(_ body: Any) throws -> HTTPClient.Response {
        try app.send("PATCH", "/v1/tenant", json: body, headers: tenant.backend)
    }

    func stats() throws -> [String: Int] {
        (try read()["stats"] as? [String: Any] ?? [:]).compactMapValues { $0 as? Int }
    }

    @Test(arguments: StoreKind.available) func defaults(_ store: StoreKind) throws {
        try use(store)
        let view = try read()
        #expect(view["id"] as? String == tenant.id)
        #expect(view["name"] as? String == "acme")
        #expect(view["requireVerification"] as? Bool == false)
        #expect(view["allowAnonymous"] as? Bool == true)
        #expect(view["emailProviderConnected"] as? Bool == false)
        #expect((view["protectedAttributes"] as? [Any])?.isEmpty == true)
        #expect((view["blockedExternalIds"] as? [Any])?.isEmpty == true)
        let limits = try #require(view["attributeLimits"] as? [String: Any])
        #expect(limits["maxKeys"] as? Int == 100)
        #expect(limits["maxKeyLength"] as? Int == 128)
        #expect(limits["maxValueBytes"] as? Int == 1024)
        #expect(try stats() == ["identifiedSubscribers": 0, "verifiedSubscribers": 0, "unverifiedAppCalls24h": 0])
        for secret in [tenant.identitySecret, tenant.secretKey, tenant.clientKey] {
            #expect(!(try app.send("GET", "/v1/tenant", headers: tenant.backend).text.contains(secret)))
        }
    }

    @Test(arguments: StoreKind.available) func everyFieldIsSettable(_ store: StoreKind) throws {
        try use(store)
        let changes: [String: Any] = [
            "requireVerification": true, "allowAnonymous": false, "emailProviderConnected": true,
            "protectedAttributes": ["plan", "tier"], "blockedExternalIds": ["test_user"],
            "attributeLimits": ["maxKeys": 10, "maxKeyLength": 20, "maxValueBytes": 30],
        ]
        for (key, value) in changes {
            let response = try patch([key: value])
            expectOK(response)
            #expect(response.tenant?[key] != nil)
        }
        let view = try read()
        #expect(view["requireVerification"] as? Bool == true)
        #expect(view["allowAnonymous"] as? Bool == false)
        #expect(view["emailProviderConnected"] as? Bool == true)
        #expect(view["protectedAttributes"] as? [String] == ["plan", "tier"])
        #expect(view["blockedExternalIds"] as? [String] == ["test_user"])
        let limits = try #require(view["attributeLimits"] as? [String: Any])
        #expect(
            limits["maxKeys"] as? Int == 10 && limits["maxKeyLength"] as? Int == 20
                && limits["maxValueBytes"] as? Int == 30)

        // A partial attributeLimits keeps the others; the secret key's workspace sibling sees the same.
        expectOK(try patch(["attributeLimits": ["maxKeys": 11]]))
        let again = try #require(
            try app.send("GET", "/v1/tenant", headers: tenant.workspace(app.workspaceKey)).tenant?["attributeLimits"]
                as? [String: Any])
        #expect(again["maxKeys"] as? Int == 11 && again["maxKeyLength"] as? Int == 20)
        // Back again.
        expectOK(try patch(["requireVerification": false, "allowAnonymous": true, "protectedAttributes": [String]()]))
        #expect(try read()["requireVerification"] as? Bool == false)
        #expect((try read()["protectedAttributes"] as? [Any])?.isEmpty == true)
    }

    @Test(arguments: StoreKind.available) func settingsTakeEffect(_ store: StoreKind) throws {
        try use(store)
        expectOK(
            try patch([
                "protectedAttributes": ["plan"], "blockedExternalIds": ["test_user"], "emailProviderConnected": true,
                "attributeLimits": ["maxKeys": 2],
            ]))
        expectError(
            try app.send("POST", "/v1/identify", json: ["externalId": "TEST_USER"], headers: tenant.app), 400,
            "invalid_external_id")
        let identify = try app.send(
            "POST", "/v1/identify",
            json: ["externalId": "user_1", "email": "ada@example.com", "attributes": ["plan": "pro"]],
            headers: tenant.app)
        expectOK(identify)
        #expect(identify.warnings.contains("attribute_protected"))
        let channels = identify.subscriber?["channels"] as? [String: Any]
        #expect((channels?["email"] as? [String: Any])?["subscribed"] as? Bool == true)
        expectError(
            try app.send(
                "PATCH", "/v1/subscribers/user_1/attributes", json: ["attributes": ["a": 1, "b": 2]],
                headers: tenant.app),
            400, "invalid_attributes")
    }

    @Test(arguments: [
        #"{"requireVerificaton": true}"#,
        #"{"requireVerification": "yes"}"#,
        #"{"requireVerification": 1}"#,
        #"{"allowAnonymous": null}"#,
        #"{"emailProviderConnected": "true"}"#,
        #"{"protectedAttributes": "plan"}"#,
        #"{"protectedAttributes": [1]}"#,
        #"{"blockedExternalIds": [""]}"#,
        #"{"attributeLimits": 5}"#,
        #"{"attributeLimits": {"maxKeys": 0}}"#,
        #"{"attributeLimits": {"maxKeys": 1.5}}"#,
        #"{"attributeLimits": {"maxKeys": "10"}}"#,
        #"{"attributeLimits": {"maxValues": 10}}"#,
        #"{"requireVerification": true, "name": "x"}"#,
        #"{"stats": {}}"#,
    ])
    func unknownFieldsAndWrongTypesAreRefused(_ body: String) throws {
        let response = app.send(
            "PATCH", "/v1/tenant", body: Array(body.utf8),
            headers: tenant.backend.merging(["Content-Type": "application/json"]) { $1 })
        expectError(response, 400, "invalid_request")
        // Nothing of a refused patch is applied, not even its valid fields.
        let view = try read()
        #expect(view["requireVerification"] as? Bool == false)
        #expect((view["attributeLimits"] as? [String: Any])?["maxKeys"] as? Int == 100)
    }

    @Test(arguments: StoreKind.available) func malformedBodiesAreRefused(_ store: StoreKind) throws {
        try use(store)
        let headers = tenant.backend.merging(["Content-Type": "application/json"]) { $1 }
        expectError(app.send("PATCH", "/v1/tenant", body: Array("{".utf8), headers: headers), 400, "invalid_json")
        expectError(app.send("PATCH", "/v1/tenant", body: Array("[]".utf8), headers: headers), 400, "invalid_json")
    }

    @Test(arguments: StoreKind.available) func countsMoveAsExpected(_ store: StoreKind) throws {
        try use(store)
        #expect(try stats() == ["identifiedSubscribers": 0, "verifiedSubscribers": 0, "unverifiedAppCalls24h": 0])

        // Anonymous app calls are not what verification is about: they stay out of every count.
        let anon = newAnonymousID()
        expectOK(
            try app.send(
                "POST", "/v1/events", json: ["subscriberId": anon, "events": [["id": "e", "name": "x"]]],
                headers: tenant.app))
        #expect(try stats() == ["identifiedSubscribers": 0, "verifiedSubscribers": 0, "unverifiedAppCalls24h": 0])

        // An unproven identify: identified, not verified, one unverified call.
        expectOK(
            try app.send(
                "POST", "/v1/identify", json: ["externalId": "user_1", "anonymousId": anon], headers: tenant.app))
        #expect(try stats() == ["identifiedSubscribers": 1, "verifiedSubscribers": 0, "unverifiedAppCalls24h": 1])

        // A proven identify (proof in the body): verified, and not an unverified call.
        expectOK(
            try app.send(
                "POST", "/v1/identify", json: ["externalId": "user_2", "identityHash": tenant.identityHash("user_2")],
                headers: tenant.app))
        #expect(try stats() == ["identifiedSubscribers": 2, "verifiedSubscribers": 1, "unverifiedAppCalls24h": 1])

        // A later app call with the proof in a header is verified; without one it is not.
        expectOK(
            try app.send(
                "PATCH", "/v1/subscribers/user_2/attributes", json: ["attributes": ["a": 1]],
                headers: tenant.app(provenFor: "user_2")))
        expectOK(
            try app.send(
                "PATCH", "/v1/subscribers/user_1/attributes", json: ["attributes": ["a": 1]], headers: tenant.app))
        #expect(try stats()["unverifiedAppCalls24h"] == 2)

        // Backend calls need no proof and are not counted; an upsert adds an identified subscriber.
        expectOK(try app.send("PUT", "/v1/subscribers/user_3", json: [String: Any](), headers: tenant.backend), 201)
        expectOK(try app.send("POST", "/v1/identify", json: ["externalId": "user_1"], headers: tenant.backend))
        #expect(try stats() == ["identifiedSubscribers": 3, "verifiedSubscribers": 1, "unverifiedAppCalls24h": 2])

        // Verifying an existing subscriber moves it from unverified to verified.
        expectOK(
            try app.send(
                "POST", "/v1/identify", json: ["externalId": "user_1", "identityHash": tenant.identityHash("user_1")],
                headers: tenant.app))
        #expect(try stats() == ["identifiedSubscribers": 3, "verifiedSubscribers": 2, "unverifiedAppCalls24h": 2])

        // A refused call for lack of proof still counts: it shows who would be locked out.
        expectError(
            try app.send(
                "PATCH", "/v1/subscribers/user_1/attributes", json: ["attributes": ["a": 2]], headers: tenant.app),
            401, "identity_verification_required")
        #expect(try stats()["unverifiedAppCalls24h"] == 3)

        // Deleting a subscriber lowers the counts.
        expectOK(try app.send("DELETE", "/v1/subscribers/user_3", headers: tenant.backend))
        #expect(try stats()["identifiedSubscribers"] == 2)

        // The window is the last 24 hours.
        app.clock.advance(byMillis: 3_600_000)
        #expect(try stats()["unverifiedAppCalls24h"] == 3)
        app.clock.advance(byMillis: 24 * 3_600_000)
        #expect(try stats()["unverifiedAppCalls24h"] == 0)

        // Another tenant's counts are its own.
        let other = try app.createTenant(name: "other")
        let otherStats = try app.send("GET", "/v1/tenant", headers: other.backend).tenant?["stats"] as? [String: Any]
        #expect(otherStats?["identifiedSubscribers"] as? Int == 0)
    }
}

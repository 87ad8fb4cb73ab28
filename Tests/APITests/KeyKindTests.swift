import Foundation
import TestSupport
import Testing

/// Each kind of key on each class of route (API.md §1).
@Suite final class KeyKindTests: TenantSuite {

    /// One app call: an anonymous subscriber's attributes.
    func appCall(_ headers: [String: String]) throws -> HTTPClient.Response {
        try app.send(
            "PATCH", "/v1/subscribers/\(newAnonymousID())/attributes", json: ["attributes": ["a": 1]], headers: headers)
    }

    /// Every backend-only route, with a body where it needs one.
    let backendCalls: [(method: String, path: String, json: Any?)] = [
        ("GET", "/v1/subscribers", nil),
        ("PUT", "/v1/subscribers/user_1", ["attributes": ["a": 1]]),
        ("GET", "/v1/subscribers/user_1", nil),
        ("DELETE", "/v1/subscribers/user_1", nil),
        ("GET", "/v1/subscribers/user_1/events", nil),
        ("POST", "/v1/subscribers/user_1/merge", ["anonymousId": "anon_AAAAAAAAAAAAAAAAAAAAA"]),
        ("GET", "/v1/tenant", nil),
        ("PATCH", "/v1/tenant", ["allowAnonymous": true]),
        ("GET", "/v1/tenant/identity-secret", nil),
        ("POST", "/v1/tenant/identity-secret/rotate", nil),
        ("GET", "/v1/keys", nil),
        ("POST", "/v1/keys", ["kind": "client"]),
        ("DELETE", "/v1/keys/key_nothing", nil),
    ]

    @Test(arguments: StoreKind.available) func clientKeyMayCallAppRoutesOnly(_ store: StoreKind) throws {
        try use(store)
        expectOK(try appCall(tenant.app))
        for call in backendCalls {
            expectError(try app.send(call.method, call.path, json: call.json, headers: tenant.app), 403, "forbidden")
        }
        expectError(try app.send("POST", "/v1/tenants", json: ["name": "x"], headers: tenant.app), 403, "forbidden")
    }

    @Test(arguments: StoreKind.available) func secretKeyMayCallAppAndBackendRoutes(_ store: StoreKind) throws {
        try use(store)
        expectOK(try appCall(tenant.backend))
        expectOK(try app.send("GET", "/v1/subscribers", headers: tenant.backend))
        expectOK(
            try app.send("PUT", "/v1/subscribers/user_1", json: ["attributes": ["a": 1]], headers: tenant.backend), 201)
        expectOK(try app.send("GET", "/v1/tenant", headers: tenant.backend))
        expectError(try app.send("POST", "/v1/tenants", json: ["name": "x"], headers: tenant.backend), 403, "forbidden")
    }

    @Test(arguments: StoreKind.available) func workspaceKeyNeedsItsOwnTenant(_ store: StoreKind) throws {
        try use(store)
        let bare = ["Authorization": "Bearer \(app.workspaceKey)"]
        expectError(try appCall(bare), 400, "tenant_required")
        expectError(try app.send("GET", "/v1/subscribers", headers: bare), 400, "tenant_required")
        expectError(
            try app.send("GET", "/v1/subscribers", headers: bare.merging(["BuzzKit-Tenant": ""]) { $1 }), 400,
            "tenant_required")

        // A tenant of another workspace is as unknown as a tenant that does not exist.
        let other = try app.createTenantInNewWorkspace().tenant
        let foreign = bare.merging(["BuzzKit-Tenant": other.id]) { $1 }
        let missing = bare.merging(["BuzzKit-Tenant": "tn_doesnotexist00000"]) { $1 }
        expectError(try appCall(foreign), 404, "tenant_not_found")
        expectError(try app.send("GET", "/v1/tenant", headers: foreign), 404, "tenant_not_found")
        #expect(
            errorShape(try app.send("GET", "/v1/tenant", headers: foreign))
                == errorShape(try app.send("GET", "/v1/tenant", headers: missing)))

        let own = tenant.workspace(app.workspaceKey)
        expectOK(try appCall(own))
        expectOK(try app.send("GET", "/v1/subscribers", headers: own))
        let read = try app.send("GET", "/v1/tenant", headers: own)
        expectOK(read)
        #expect(read.tenant?["id"] as? String == tenant.id)
    }

    @Test(arguments: StoreKind.available) func workspaceKeyCreatesTenantsAndTheirKeysAreShownOnce(_ store: StoreKind)
        throws
    {
        try use(store)
        let created = try app.send(
            "POST", "/v1/tenants", json: ["name": "globex"], headers: ["Authorization": "Bearer \(app.workspaceKey)"])
        expectOK(created, 201)
        let fresh = try TestTenant(created: created)
        #expect(fresh.secretKey.hasPrefix("bk_secret_"))
        #expect(fresh.clientKey.hasPrefix("bk_client_"))
        #expect(fresh.identitySecret.hasPrefix("bk_isec_"))
        #expect(created.tenant?["name"] as? String == "globex")
        #expect(created.tenant?["requireVerification"] as? Bool == false)

        // The new keys work, and nothing read later shows them again.
        let tenantView = try app.send("GET", "/v1/tenant", headers: fresh.backend)
        expectOK(tenantView)
        let keysView = try app.send("GET", "/v1/keys", headers: fresh.backend)
        expectOK(keysView)
        for shown in [tenantView.text, keysView.text] {
            #expect(!shown.contains(fresh.secretKey))
            #expect(!shown.contains(fresh.clientKey))
            #expect(!shown.contains(fresh.identitySecret))
        }
        expectOK(try appCall(fresh.app))

        // Bad names are refused.
        let bare = ["Authorization": "Bearer \(app.workspaceKey)"]
        expectError(try app.send("POST", "/v1/tenants", json: ["name": "  "], headers: bare), 400, "invalid_request")
        expectError(try app.send("POST", "/v1/tenants", json: [String: Any](), headers: bare), 400, "invalid_request")
        expectError(
            try app.send("POST", "/v1/tenants", json: ["name": "x", "plan": "pro"], headers: bare), 400,
            "invalid_request")
    }

    @Test(arguments: [
        [:],
        ["Authorization": "Bearer"],
        ["Authorization": "Bearer "],
        ["Authorization": "Bearer nonsense"],
        ["Authorization": "Basic dXNlcjpwYXNz"],
        ["Authorization": "Bearer bk_client_short"],
        ["Authorization": "Bearer bk_client_" + String(repeating: "A", count: 32)],
        ["Authorization": "Bearer bk_secret_" + String(repeating: "A", count: 32)],
        ["Authorization": "Bearer bk_ws_" + String(repeating: "A", count: 32)],
    ])
    func missingOrGarbledKeyIsUnauthorized(_ headers: [String: String]) throws {
        expectError(try appCall(headers), 401, "unauthorized")
        expectError(try app.send("GET", "/v1/subscribers", headers: headers), 401, "unauthorized")
        expectError(try app.send("POST", "/v1/tenants", json: ["name": "x"], headers: headers), 401, "unauthorized")
    }

    @Test(arguments: StoreKind.available) func aKeyWithAnotherKindsPrefixIsUnauthorized(_ store: StoreKind) throws {
        try use(store)
        let random = String(tenant.secretKey.dropFirst("bk_secret_".count))
        expectError(try appCall(["Authorization": "Bearer bk_client_\(random)"]), 401, "unauthorized")
        let changed = String(tenant.secretKey.dropLast()) + (tenant.secretKey.hasSuffix("A") ? "B" : "A")
        expectError(try appCall(["Authorization": "Bearer \(changed)"]), 401, "unauthorized")
        // Scheme names are case-insensitive (RFC 9110 §11.1).
        expectOK(try appCall(["Authorization": "bearer \(tenant.secretKey)"]))
        expectOK(try appCall(["Authorization": "BEARER   \(tenant.secretKey) "]))
        expectError(try appCall(["Authorization": "Bearer_\(tenant.secretKey)"]), 401, "unauthorized")
        expectError(try appCall(["Authorization": "Bearerx\(tenant.secretKey)"]), 401, "unauthorized")
    }

    @Test(arguments: StoreKind.available) func revokedKeysAreUnauthorized(_ store: StoreKind) throws {
        try use(store)
        try app.revoke(key: tenant.clientKey)
        expectError(try appCall(tenant.app), 401, "unauthorized")
        expectOK(try appCall(tenant.backend))
    }
}

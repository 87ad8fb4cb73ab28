import Foundation
import TestSupport
import Testing

/// `GET /v1/keys`, `POST /v1/keys`, `DELETE /v1/keys/{id}`: listed without the secret, replaced, revoked.
@Suite final class KeyEndpointTests: TenantSuite {

    func keys(_ headers: [String: String]? = nil) throws -> [[String: Any]] {
        let response = try app.send("GET", "/v1/keys", headers: headers ?? tenant.backend)
        expectOK(response)
        return try #require(response.data?["keys"] as? [[String: Any]])
    }

    @Test(arguments: StoreKind.available) func listsTheTenantsKeysWithoutTheirSecret(_ store: StoreKind) throws {
        try use(store)
        let listed = try keys()
        #expect(listed.count == 2)
        #expect(Set(listed.compactMap { $0["kind"] as? String }) == ["secret", "client"])
        for key in listed {
            #expect((key["id"] as? String)?.hasPrefix("key_") == true)
            #expect(key["revokedAt"] is NSNull)
            #expect(key["createdAt"] is String)
            let prefix = try #require(key["prefix"] as? String)
            #expect([tenant.secretKey, tenant.clientKey].contains { $0.hasPrefix(prefix) })
            #expect(prefix.count < 20)
        }
        let text = try app.send("GET", "/v1/keys", headers: tenant.backend).text
        #expect(!text.contains(tenant.secretKey) && !text.contains(tenant.clientKey))
        #expect(try keys(tenant.workspace(app.workspaceKey)).count == 2)
    }

    @Test(arguments: StoreKind.available) func aNewClientKeyReplacesALeakedOne(_ store: StoreKind) throws {
        try use(store)
        let created = try app.send("POST", "/v1/keys", json: ["kind": "client"], headers: tenant.backend)
        expectOK(created, 201)
        let newKey = try #require(created.data?["apiKey"] as? String)
        #expect(newKey.hasPrefix("bk_client_"))
        let record = try #require(created.data?["key"] as? [String: Any])
        #expect(record["kind"] as? String == "client")
        let app1 = ["Authorization": "Bearer \(newKey)"]
        expectOK(
            try app.send(
                "PATCH", "/v1/subscribers/\(newAnonymousID())/attributes", json: ["attributes": ["a": 1]], headers: app1
            ))

        let leaked = try #require(
            try keys().first { $0["kind"] as? String == "client" && $0["id"] as? String != record["id"] as? String })
        let leakedID = try #require(leaked["id"] as? String)
        let revoked = try app.send("DELETE", "/v1/keys/\(leakedID)", headers: tenant.backend)
        expectOK(revoked)
        #expect(revoked.data?["revoked"] as? Bool == true)
        expectError(
            try app.send(
                "PATCH", "/v1/subscribers/\(newAnonymousID())/attributes", json: ["attributes": ["a": 1]],
                headers: tenant.app),
            401, "unauthorized")
        expectOK(
            try app.send(
                "PATCH", "/v1/subscribers/\(newAnonymousID())/attributes", json: ["attributes": ["a": 1]], headers: app1
            ))
        // Listed as revoked, with its time; revoking again is not found.
        let after = try #require(try keys().first { $0["id"] as? String == leakedID })
        #expect(after["revokedAt"] is String)
        expectError(try app.send("DELETE", "/v1/keys/\(leakedID)", headers: tenant.backend), 404, "not_found")
    }

    @Test(arguments: StoreKind.available) func aSecretKeyCanRevokeItself(_ store: StoreKind) throws {
        try use(store)
        let created = try app.send("POST", "/v1/keys", json: ["kind": "secret"], headers: tenant.backend)
        let newSecret = try #require(created.data?["apiKey"] as? String)
        #expect(newSecret.hasPrefix("bk_secret_"))
        let newID = try #require((created.data?["key"] as? [String: Any])?["id"] as? String)
        let oldID = try #require(
            try keys().first { $0["kind"] as? String == "secret" && $0["id"] as? String != newID }?["id"] as? String)
        expectOK(try app.send("DELETE", "/v1/keys/\(oldID)", headers: tenant.backend))
        expectError(try app.send("GET", "/v1/keys", headers: tenant.backend), 401, "unauthorized")
        #expect(try keys(["Authorization": "Bearer \(newSecret)"]).count == 3)
    }

    @Test(arguments: StoreKind.available) func badRequestsAreRefused(_ store: StoreKind) throws {
        try use(store)
        for body: [String: Any] in [[:], ["kind": "workspace"], ["kind": "admin"], ["kind": "client", "name": "x"]] {
            expectError(try app.send("POST", "/v1/keys", json: body, headers: tenant.backend), 400, "invalid_request")
        }
        expectError(try app.send("DELETE", "/v1/keys/key_nothing", headers: tenant.backend), 404, "not_found")
        // A workspace key is not a tenant key: the tenant's listing cannot revoke it.
        expectOK(try app.send("GET", "/v1/keys", headers: tenant.workspace(app.workspaceKey)))
    }
}

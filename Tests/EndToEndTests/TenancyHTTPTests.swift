import Foundation
import TestSupport
import Testing

/// Keys, tenants and identity proofs over real HTTP against `buzzkit serve`: the headers
/// (`Authorization`, `BuzzKit-Tenant`, `BuzzKit-Identity-*`, `Retry-After`) as they cross the wire.
@Suite final class TenancyHTTPTests {
    var server: TestServer
    var client: HTTPClient
    var tenant: TestTenant

    init() throws {
        server = try TestServer.start()
        client = try HTTPClient(port: server.port)
        tenant = try server.createTenant()
    }
    deinit { server.stop() }

    /// Moves this test onto a server over `store` (the SQLite one made by `init` is stopped).
    func use(_ store: StoreKind) throws {
        guard store != .sqlite else { return }
        server.stop()
        server = try TestServer.start(store: store)
        client = try HTTPClient(port: server.port)
        tenant = try server.createTenant()
    }

    private var nowMillis: Int64 { Int64(Date().timeIntervalSince1970 * 1000) }

    private func check(
        _ response: HTTPClient.Response, _ status: Int, _ code: String? = nil,
        sourceLocation: SourceLocation = #_sourceLocation
    ) {
        #expect(response.status == status, "\(response.text)", sourceLocation: sourceLocation)
        if let code { #expect(response.errorCode == code, "\(response.text)", sourceLocation: sourceLocation) }
    }

    private func appCall(_ headers: [String: String]) throws -> HTTPClient.Response {
        try client.send(
            "PATCH", "/v1/subscribers/\(newAnonymousID())/attributes", json: ["attributes": ["a": 1]], headers: headers)
    }

    @Test(arguments: StoreKind.available) func keyKindsOnEachRouteClass(_ store: StoreKind) throws {
        try use(store)
        check(try appCall(tenant.app), 200)
        check(try client.send("GET", "/v1/subscribers", headers: tenant.app), 403, "forbidden")
        check(try client.send("POST", "/v1/tenants", json: ["name": "x"], headers: tenant.app), 403, "forbidden")
        check(try appCall(tenant.backend), 200)
        check(try client.send("GET", "/v1/subscribers", headers: tenant.backend), 200)
        check(try client.send("POST", "/v1/tenants", json: ["name": "x"], headers: tenant.backend), 403, "forbidden")

        let workspace = ["Authorization": "Bearer \(server.workspaceKey)"]
        check(try client.send("GET", "/v1/subscribers", headers: workspace), 400, "tenant_required")
        check(try appCall(workspace), 400, "tenant_required")
        let missing = workspace.merging(["BuzzKit-Tenant": "tn_" + randomAlphanumerics(16)]) { $1 }
        check(try client.send("GET", "/v1/subscribers", headers: missing), 404, "tenant_not_found")
        let own = workspace.merging(["BuzzKit-Tenant": tenant.id]) { $1 }
        check(try client.send("GET", "/v1/subscribers", headers: own), 200)
        check(try appCall(own), 200)
        let created = try client.send("POST", "/v1/tenants", json: ["name": "globex"], headers: workspace)
        check(created, 201)
        let globex = try TestTenant(created: created)
        let view = try client.send("GET", "/v1/tenant", headers: globex.backend)
        check(view, 200)
        #expect(!view.text.contains(globex.secretKey) && !view.text.contains(globex.identitySecret))

        check(try appCall([:]), 401, "unauthorized")
        check(try appCall(["Authorization": "Bearer bk_client_garbled"]), 401, "unauthorized")
        // Revoked through the API: 401 from the next call on.
        let keys = try client.send("GET", "/v1/keys", headers: globex.backend).data?["keys"] as? [[String: Any]] ?? []
        let clientKeyID = try #require(keys.first { $0["kind"] as? String == "client" }?["id"] as? String)
        check(try client.send("DELETE", "/v1/keys/\(clientKeyID)", headers: globex.backend), 200)
        check(try appCall(globex.app), 401, "unauthorized")
    }

    @Test(arguments: StoreKind.available) func identityTokensOverHTTP(_ store: StoreKind) throws {
        try use(store)
        let secret = tenant.identitySecret
        let exp = nowMillis / 1000 + 3600
        func identify(_ user: String, token: String) throws -> HTTPClient.Response {
            try client.send(
                "POST", "/v1/identify", json: ["externalId": user, "identityToken": token], headers: tenant.app)
        }
        let valid = try identify(
            "user_42", token: TestTokens.valid(subject: "user_42", nowMillis: nowMillis, secret: secret))
        check(valid, 200)
        #expect((valid.data?["subscriber"] as? [String: Any])?["verified"] as? Bool == true)

        let expired = TestTokens.make(claims: ["sub": "user_42", "exp": nowMillis / 1000 - 300], secret: secret)
        check(try identify("user_42", token: expired), 401, "identity_token_expired")

        let good = TestTokens.valid(subject: "user_42", nowMillis: nowMillis, secret: secret).split(separator: ".").map(
            String.init)
        let refused: [(String, String)] = [
            ("alg none", TestTokens.segment(["alg": "none", "typ": "JWT"]) + "." + good[1] + "."),
            (
                "HS512",
                TestTokens.make(
                    header: ["alg": "HS512", "typ": "JWT"], claims: ["sub": "user_42", "exp": exp], secret: secret)
            ),
            (
                "other secret",
                TestTokens.valid(subject: "user_42", nowMillis: nowMillis, secret: "bk_isec_" + randomAlphanumerics(43))
            ),
            ("tampered", good[0] + "." + TestTokens.segment(["sub": "user_42", "exp": exp + 60]) + "." + good[2]),
            ("missing exp", TestTokens.make(claims: ["sub": "user_42"], secret: secret)),
            (
                "exp over 30 days",
                TestTokens.make(claims: ["sub": "user_42", "exp": nowMillis / 1000 + 31 * 86400], secret: secret)
            ),
            ("sub mismatch", TestTokens.valid(subject: "user_43", nowMillis: nowMillis, secret: secret)),
        ]
        for (name, token) in refused {
            let response = try identify("user_42", token: token)
            #expect(response.status == 401, "\(name)")
            #expect(response.errorCode == "invalid_identity_token", "\(name): \(response.text)")
        }
    }

    @Test(arguments: StoreKind.available) func proofHeadersUnderRequireVerification(_ store: StoreKind) throws {
        try use(store)
        check(try client.send("PATCH", "/v1/tenant", json: ["requireVerification": true], headers: tenant.backend), 200)
        let path = "/v1/subscribers/user_7/attributes"
        check(
            try client.send("PATCH", path, json: ["attributes": ["a": 1]], headers: tenant.app), 401,
            "identity_verification_required")
        check(
            try client.send("PATCH", path, json: ["attributes": ["a": 1]], headers: tenant.app(provenFor: "user_7")),
            200)
        let token = TestTokens.valid(subject: "user_7", nowMillis: nowMillis, secret: tenant.identitySecret)
        check(
            try client.send(
                "POST", "/v1/events", json: ["subscriberId": "user_7", "events": [["id": "e1", "name": "x"]]],
                headers: tenant.app.merging(["BuzzKit-Identity-Token": token]) { $1 }), 200)
        check(try appCall(tenant.app), 200)  // anonymous ids still work
        check(try client.send("PATCH", path, json: ["attributes": ["a": 2]], headers: tenant.backend), 200)

        // A tenant's secrets rotate over HTTP; the new one verifies at once.
        let rotated = try client.send("POST", "/v1/tenant/identity-secret/rotate", headers: tenant.backend)
        check(rotated, 200)
        let newSecret = try #require(rotated.data?["identitySecret"] as? String)
        check(
            try client.send(
                "PATCH", path, json: ["attributes": ["a": 3]],
                headers: tenant.app(provenFor: "user_7", secret: newSecret)), 200)
        check(
            try client.send("PATCH", path, json: ["attributes": ["a": 4]], headers: tenant.app(provenFor: "user_7")),
            200)
    }

    @Test(arguments: StoreKind.available) func anotherTenantsIdsAreInvisible(_ store: StoreKind) throws {
        try use(store)
        let other = try server.createTenant(name: "other")
        check(
            try client.send("PUT", "/v1/subscribers/user_b", json: ["attributes": ["x": 1]], headers: other.backend),
            201)
        let there = try client.send("GET", "/v1/subscribers/user_b", headers: tenant.backend)
        let nowhere = try client.send("GET", "/v1/subscribers/user_nowhere", headers: tenant.backend)
        check(there, 404, "subscriber_not_found")
        #expect(there.status == nowhere.status)
        #expect(
            (there.json?["error"] as? [String: Any])?["message"] as? String
                == (nowhere.json?["error"] as? [String: Any])?["message"] as? String)
    }

    /// One kept-alive connection whose heads differ only in a key or a request id of the same
    /// length: each is answered as what it sent. The server shares a head's fields with the last
    /// head's only when their field lines are the same bytes (`RepeatedFieldLines`).
    @Test(arguments: StoreKind.available) func aConnectionsHeadsAreEachReadAsSent(_ store: StoreKind) throws {
        try use(store)
        let other = try server.createTenant()
        try #require(other.secretKey.utf8.count == tenant.secretKey.utf8.count)
        var forged = tenant.secretKey
        forged.removeLast()
        forged.append(tenant.secretKey.hasSuffix("x") ? "y" : "x")
        let turns: [(key: String, tenantID: String?)] = [
            (tenant.secretKey, tenant.id), (tenant.secretKey, tenant.id), (other.secretKey, other.id),
            (forged, nil), (tenant.secretKey, tenant.id), (other.secretKey, other.id), (other.secretKey, other.id),
        ]
        for round in 0..<2 {
            for (turn, sent) in turns.enumerated() {
                let requestID = "req_\(round)_\(turn)"
                try client.write(
                    "GET /v1/tenant HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer \(sent.key)\r\n"
                        + "X-Request-Id: \(requestID)\r\n\r\n")
                let response = try client.readResponse()
                #expect(response.header("X-Request-Id") == requestID)
                if let expected = sent.tenantID {
                    check(response, 200)
                    #expect((response.data?["tenant"] as? [String: Any])?["id"] as? String == expected)
                } else {
                    check(response, 401, "unauthorized")
                }
            }
        }
    }
}

/// The client key's rate limit from the config file, over the wire.
@Suite struct TenancyRateLimitHTTPTests {
    @Test(arguments: StoreKind.available) func clientKeyGets429WithRetryAfter(_ store: StoreKind) throws {
        // Per server on either store (API.md §12).
        let server = try TestServer.start(config: ["clientKeyRatePerSecond": 1, "clientKeyBurst": 2], store: store)
        defer { server.stop() }
        let tenant = try server.createTenant()
        let client = try HTTPClient(port: server.port)
        let anon = newAnonymousID()
        func call(_ headers: [String: String]) throws -> HTTPClient.Response {
            try client.send(
                "PATCH", "/v1/subscribers/\(anon)/attributes", json: ["attributes": ["a": 1]], headers: headers)
        }
        var statuses: [Int] = []
        var retryAfter: String?
        for _ in 0..<4 {
            let response = try call(tenant.app)
            statuses.append(response.status)
            if response.status == 429 {
                #expect(response.errorCode == "rate_limited")
                retryAfter = response.header("Retry-After")
            }
        }
        #expect(statuses.prefix(2) == [200, 200])
        #expect(statuses.contains(429), "\(statuses)")
        #expect(retryAfter == "1")
        for _ in 0..<10 { #expect(try call(tenant.backend).status == 200) }
    }
}

import Foundation
import TestSupport
import Testing

/// Identity verification through the API (API.md §9).
@Suite final class VerificationAPITests: TenantSuite {

    var nowMillis: Int64 { app.clock.nowMillis }

    func identify(_ body: [String: Any], headers: [String: String]? = nil) throws -> HTTPClient.Response {
        try app.send("POST", "/v1/identify", json: body, headers: headers ?? tenant.app)
    }

    func backendView(_ id: String) throws -> HTTPClient.Response {
        try app.send("GET", "/v1/subscribers/\(id)", headers: tenant.backend)
    }

    func setting(_ patch: [String: Any]) throws {
        expectOK(try app.send("PATCH", "/v1/tenant", json: patch, headers: tenant.backend))
    }

    // MARK: - Proofs on identify

    @Test(arguments: StoreKind.available) func validHashVerifies(_ store: StoreKind) throws {
        try use(store)
        let response = try identify(["externalId": "user_42", "identityHash": tenant.identityHash("user_42")])
        expectOK(response)
        #expect(response.subscriber?["verified"] as? Bool == true)
        // Hex of either case.
        expectOK(try identify(["externalId": "user_42", "identityHash": tenant.identityHash("user_42").uppercased()]))
    }

    @Test(arguments: StoreKind.available) func unprovenIdentifyIsUnverified(_ store: StoreKind) throws {
        try use(store)
        let response = try identify(["externalId": "user_42"])
        expectOK(response)
        #expect(response.subscriber?["verified"] as? Bool == false)
    }

    @Test(arguments: StoreKind.available) func wrongHashIsRefusedAndChangesNothing(_ store: StoreKind) throws {
        try use(store)
        let anon = newAnonymousID()
        expectOK(
            try app.send(
                "POST", "/v1/events", json: ["subscriberId": anon, "events": [["id": "e1", "name": "x"]]],
                headers: tenant.app))
        let wrong = String(tenant.identityHash("user_42").reversed())
        for hash in [wrong, "", "not hex", tenant.identityHash("user_43")] {
            let response = try identify([
                "externalId": "user_42", "anonymousId": anon, "identityHash": hash, "attributes": ["plan": "pro"],
                "email": "ada@example.com",
            ])
            expectError(response, 401, "invalid_identity_hash")
        }
        expectError(try backendView("user_42"), 404, "subscriber_not_found")
        let anonView = try backendView(anon)
        #expect(anonView.subscriber?["id"] as? String == anon)
        #expect(anonView.subscriber?["anonymous"] as? Bool == true)
        #expect(anonView.subscriber?["eventCount"] as? Int == 1)
    }

    @Test(arguments: StoreKind.available) func aWrongProofIsRefusedEvenWhereNoneIsNeeded(_ store: StoreKind) throws {
        try use(store)
        // A backend key needs no proof, but one that is sent must be right.
        expectError(
            try identify(
                ["externalId": "user_42", "identityHash": tenant.identityHash("user_1")], headers: tenant.backend),
            401, "invalid_identity_hash")
    }

    @Test(arguments: StoreKind.available) func aProofForOneUserIsRefusedForAnother(_ store: StoreKind) throws {
        try use(store)
        let forA = tenant.identityHash("user_a")
        expectError(try identify(["externalId": "user_b", "identityHash": forA]), 401, "invalid_identity_hash")
        let tokenForA = TestTokens.valid(subject: "user_a", nowMillis: nowMillis, secret: tenant.identitySecret)
        expectError(try identify(["externalId": "user_b", "identityToken": tokenForA]), 401, "invalid_identity_token")
        // Nor in a header of a later call.
        expectOK(try identify(["externalId": "user_b", "identityHash": tenant.identityHash("user_b")]))
        var headers = tenant.app
        headers["BuzzKit-Identity-Hash"] = forA
        expectError(
            try app.send(
                "PATCH", "/v1/subscribers/user_b/attributes", json: ["attributes": ["a": 1]], headers: headers),
            401, "invalid_identity_hash")
    }

    // MARK: - Tokens

    @Test(arguments: StoreKind.available) func validTokenVerifies(_ store: StoreKind) throws {
        try use(store)
        for claims: [String: Any] in [
            ["sub": "user_42", "exp": nowMillis / 1000 + 3600],
            ["userId": "user_42", "exp": nowMillis / 1000 + 3600],
            ["sub": "user_42", "exp": nowMillis / 1000 + 29 * 86400],
        ] {
            let token = TestTokens.make(claims: claims, secret: tenant.identitySecret)
            let response = try identify(["externalId": "user_42", "identityToken": token])
            expectOK(response)
            #expect(response.subscriber?["verified"] as? Bool == true)
        }
    }

    @Test(arguments: StoreKind.available) func expiredTokenIsRefused(_ store: StoreKind) throws {
        try use(store)
        let token = TestTokens.valid(
            subject: "user_42", nowMillis: nowMillis, expiresIn: 60, secret: tenant.identitySecret)
        expectOK(try identify(["externalId": "user_42", "identityToken": token]))
        app.clock.advance(bySeconds: 60 + 61)  // past exp and the minute of leeway
        expectError(try identify(["externalId": "user_42", "identityToken": token]), 401, "identity_token_expired")
    }

    /// Each way a token can be wrong, against a fixed clock.
    func badTokens() -> [(String, String)] {
        let secret = tenant.identitySecret
        let exp = nowMillis / 1000 + 3600
        let good = TestTokens.valid(subject: "user_42", nowMillis: nowMillis, secret: secret)
        let parts = good.split(separator: ".").map(String.init)
        let tamperedPayload = TestTokens.segment(["sub": "user_43", "exp": exp])
        return [
            ("alg none", TestTokens.segment(["alg": "none", "typ": "JWT"]) + "." + parts[1] + "."),
            (
                "alg none, signed",
                TestTokens.make(header: ["alg": "none"], claims: ["sub": "user_42", "exp": exp], secret: secret)
            ),
            (
                "HS512",
                TestTokens.make(
                    header: ["alg": "HS512", "typ": "JWT"], claims: ["sub": "user_42", "exp": exp], secret: secret)
            ),
            (
                "RS256",
                TestTokens.make(
                    header: ["alg": "RS256", "typ": "JWT"], claims: ["sub": "user_42", "exp": exp], secret: secret)
            ),
            (
                "other secret",
                TestTokens.valid(subject: "user_42", nowMillis: nowMillis, secret: "bk_isec_" + randomAlphanumerics(43))
            ),
            ("tampered payload", parts[0] + "." + tamperedPayload + "." + parts[2]),
            ("tampered signature", parts[0] + "." + parts[1] + "." + String(parts[2].reversed())),
            ("missing exp", TestTokens.make(claims: ["sub": "user_42"], secret: secret)),
            ("exp not a number", TestTokens.make(claims: ["sub": "user_42", "exp": "tomorrow"], secret: secret)),
            (
                "exp over 30 days",
                TestTokens.make(claims: ["sub": "user_42", "exp": nowMillis / 1000 + 31 * 86400], secret: secret)
            ),
            ("sub mismatch", TestTokens.valid(subject: "user_43", nowMillis: nowMillis, secret: secret)),
            ("missing sub", TestTokens.make(claims: ["exp": exp], secret: secret)),
            ("two segments", parts[0] + "." + parts[1]),
            ("garbage", "not.a.token"),
            ("empty", ""),
        ]
    }

    @Test(arguments: StoreKind.available) func badTokensAreRefused(_ store: StoreKind) throws {
        try use(store)
        for (name, token) in badTokens() {
            let response = try identify(["externalId": "user_42", "identityToken": token])
            #expect(response.status == 401, "\(name)")
            #expect(response.errorCode == "invalid_identity_token", "\(name): \(response.text)")
        }
        expectError(try backendView("user_42"), 404, "subscriber_not_found")
    }

    // MARK: - requireVerification

    /// Every app call that names `id`, with the given headers.
    func appCalls(naming id: String, headers: [String: String]) throws -> [(String, HTTPClient.Response)] {
        var identifyBody: [String: Any] = ["externalId": id]
        if id.hasPrefix("anon_") { identifyBody = ["externalId": "user_of_\(id)", "anonymousId": id] }
        return [
            (
                "attributes",
                try app.send(
                    "PATCH", "/v1/subscribers/\(id)/attributes", json: ["attributes": ["a": 1]], headers: headers)
            ),
            (
                "events",
                try app.send(
                    "POST", "/v1/events",
                    json: ["subscriberId": id, "events": [["id": randomAlphanumerics(8), "name": "x"]]],
                    headers: headers)
            ),
            (
                "push",
                try app.send(
                    "PUT", "/v1/subscribers/\(id)/push-subscriptions/dev_\(id)",
                    json: ["token": "tok_\(id)", "platform": "ios"], headers: headers)
            ),
            (
                "preferences",
                try app.send(
                    "PUT", "/v1/subscribers/\(id)/preferences", json: ["topics": ["news": true]], headers: headers)
            ),
            ("logout", try app.send("DELETE", "/v1/subscribers/\(id)/push-subscriptions/dev_\(id)", headers: headers)),
            (
                "identify",
                id.hasPrefix("anon_") ? nil : try app.send("POST", "/v1/identify", json: identifyBody, headers: headers)
            ),
        ].compactMap { name, response in response.map { (name, $0) } }
    }

    @Test(arguments: StoreKind.available) func requireVerificationRefusesUnprovenAppCallsOnExternalIDs(
        _ store: StoreKind
    ) throws {
        try use(store)
        try setting(["requireVerification": true])
        // Unknown and known (created by the backend) external ids alike.
        expectOK(try app.send("PUT", "/v1/subscribers/user_known", json: [String: Any](), headers: tenant.backend), 201)
        for id in ["user_new", "user_known"] {
            for (name, response) in try appCalls(naming: id, headers: tenant.app) {
                #expect(response.status == 401, "\(name) \(id)")
                #expect(response.errorCode == "identity_verification_required", "\(name) \(id): \(response.text)")
            }
        }
        expectError(try backendView("user_new"), 404, "subscriber_not_found")
        // Anonymous ids still work.
        for (name, response) in try appCalls(naming: newAnonymousID(), headers: tenant.app) {
            #expect(response.status == 200, "\(name): \(response.text)")
        }
    }

    @Test(arguments: StoreKind.available) func proofHeadersAuthorizeLaterAppCalls(_ store: StoreKind) throws {
        try use(store)
        try setting(["requireVerification": true])
        let token = TestTokens.valid(subject: "user_t", nowMillis: nowMillis, secret: tenant.identitySecret)
        let cases: [(String, [String: String])] = [
            ("user_h", tenant.app(provenFor: "user_h")),
            ("user_t", tenant.app.merging(["BuzzKit-Identity-Token": token]) { $1 }),
        ]
        for (id, headers) in cases {
            for (name, response) in try appCalls(naming: id, headers: headers) {
                #expect(response.status == 200, "\(name) \(id): \(response.text)")
            }
            #expect(try backendView(id).subscriber?["verified"] as? Bool == true)
        }
        // Identify takes the proof from the header too.
        expectOK(try identify(["externalId": "user_h"], headers: tenant.app(provenFor: "user_h")))
        // A wrong header proof is refused, not ignored.
        var wrong = tenant.app
        wrong["BuzzKit-Identity-Token"] = token
        expectError(
            try app.send("PATCH", "/v1/subscribers/user_h/attributes", json: ["attributes": ["a": 2]], headers: wrong),
            401, "invalid_identity_token")
    }

    @Test(arguments: StoreKind.available) func onceVerifiedAlwaysVerified(_ store: StoreKind) throws {
        try use(store)
        // requireVerification is off (the default).
        expectOK(try identify(["externalId": "user_v", "identityHash": tenant.identityHash("user_v")]))
        for (name, response) in try appCalls(naming: "user_v", headers: tenant.app) {
            #expect(response.status == 401, "\(name)")
            #expect(response.errorCode == "identity_verification_required", "\(name): \(response.text)")
        }
        for (name, response) in try appCalls(naming: "user_v", headers: tenant.app(provenFor: "user_v")) {
            #expect(response.status == 200, "\(name): \(response.text)")
        }
        // Reached through an alias, it is the same verified person.
        let anon = newAnonymousID()
        expectOK(
            try identify(["externalId": "user_v", "anonymousId": anon, "identityHash": tenant.identityHash("user_v")]))
        expectError(
            try app.send(
                "PATCH", "/v1/subscribers/\(anon)/attributes", json: ["attributes": ["a": 1]], headers: tenant.app),
            401, "identity_verification_required")
        // An unverified user stays reachable without proof.
        expectOK(try identify(["externalId": "user_u"]))
        expectOK(
            try app.send(
                "PATCH", "/v1/subscribers/user_u/attributes", json: ["attributes": ["a": 1]], headers: tenant.app))
    }

    @Test(arguments: StoreKind.available) func backendKeysNeedNoProof(_ store: StoreKind) throws {
        try use(store)
        try setting(["requireVerification": true])
        expectOK(try identify(["externalId": "user_v", "identityHash": tenant.identityHash("user_v")]))
        for headers in [tenant.backend, tenant.workspace(app.workspaceKey)] {
            for id in ["user_v", "user_b"] {
                for (name, response) in try appCalls(naming: id, headers: headers) {
                    #expect(response.status == 200, "\(name) \(id): \(response.text)")
                }
            }
        }
        #expect(try backendView("user_b").subscriber?["verified"] as? Bool == false)
    }

    @Test(arguments: StoreKind.available) func allowAnonymousOffRefusesUnseenAnonymousIDs(_ store: StoreKind) throws {
        try use(store)
        let known = newAnonymousID()
        expectOK(
            try app.send(
                "POST", "/v1/events", json: ["subscriberId": known, "events": [["id": "e", "name": "x"]]],
                headers: tenant.app))
        try setting(["allowAnonymous": false])
        let unseen = newAnonymousID()
        for (name, response) in try appCalls(naming: unseen, headers: tenant.app) {
            #expect(response.status == 401, "\(name)")
            #expect(response.errorCode == "identity_verification_required", "\(name): \(response.text)")
        }
        expectError(try backendView(unseen), 404, "subscriber_not_found")
        // External ids still work without proof (requireVerification is off); the backend may use anonymous ids.
        expectOK(
            try app.send(
                "PATCH", "/v1/subscribers/user_1/attributes", json: ["attributes": ["a": 1]], headers: tenant.app))
        expectOK(
            try app.send(
                "PATCH", "/v1/subscribers/\(unseen)/attributes", json: ["attributes": ["a": 1]], headers: tenant.backend
            ))
        // Signing in from an anonymous device still works: identify names the external id.
        expectOK(try identify(["externalId": "user_2", "anonymousId": known]))
    }
}

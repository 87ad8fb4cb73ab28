import Foundation
import TestSupport
import Testing

/// `POST /v1/tenant/identity-secret/rotate` with a manual clock (API.md §5, §9): both secrets
/// verify for 24 hours, a second rotation inside them retires the oldest at once.
@Suite final class RotationTests: TenantSuite {
    static let day: Int64 = 24 * 3_600_000

    func rotate() throws -> (secret: String, previousExpiresAt: String) {
        let response = try app.send("POST", "/v1/tenant/identity-secret/rotate", headers: tenant.backend)
        expectOK(response)
        let secret = try #require(response.data?["identitySecret"] as? String)
        let expires = try #require(response.data?["previousExpiresAt"] as? String)
        return (secret, expires)
    }

    /// Identify with a hash made with `secret`: true when accepted as verified.
    func verifies(_ secret: String, token: Bool = false, user: String = "user_\(randomAlphanumerics(6))") throws -> Bool
    {
        var body: [String: Any] = ["externalId": user]
        if token {
            body["identityToken"] = TestTokens.valid(subject: user, nowMillis: app.clock.nowMillis, secret: secret)
        } else {
            body["identityHash"] = tenant.identityHash(user, secret: secret)
        }
        let response = try app.send("POST", "/v1/identify", json: body, headers: tenant.app)
        if response.status == 200 { return response.subscriber?["verified"] as? Bool == true }
        #expect(response.errorCode == (token ? "invalid_identity_token" : "invalid_identity_hash"), "\(response.text)")
        return false
    }

    /// The RFC 3339 form of the manual clock plus `millis`.
    func time(plus millis: Int64) -> String {
        let date = Date(timeIntervalSince1970: Double(app.clock.nowMillis + millis) / 1000)
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        formatter.timeZone = TimeZone(identifier: "UTC")
        return formatter.string(from: date)
    }

    func currentSecret() throws -> HTTPClient.Response {
        let response = try app.send("GET", "/v1/tenant/identity-secret", headers: tenant.backend)
        expectOK(response)
        return response
    }

    @Test(arguments: StoreKind.available) func getReturnsTheCurrentSecret(_ store: StoreKind) throws {
        try use(store)
        let before = try currentSecret()
        #expect(before.data?["identitySecret"] as? String == tenant.identitySecret)
        #expect(before.data?["previousExpiresAt"] == nil)
        let rotated = try rotate()
        let after = try currentSecret()
        #expect(after.data?["identitySecret"] as? String == rotated.secret)
        #expect(after.data?["previousExpiresAt"] as? String == rotated.previousExpiresAt)
        // The workspace key sees the same; the client key may not look.
        let viaWorkspace = try app.send(
            "GET", "/v1/tenant/identity-secret", headers: tenant.workspace(app.workspaceKey))
        #expect(viaWorkspace.data?["identitySecret"] as? String == rotated.secret)
        expectError(try app.send("GET", "/v1/tenant/identity-secret", headers: tenant.app), 403, "forbidden")
        expectError(try app.send("POST", "/v1/tenant/identity-secret/rotate", headers: tenant.app), 403, "forbidden")
    }

    @Test(arguments: StoreKind.available) func bothSecretsVerifyForTwentyFourHours(_ store: StoreKind) throws {
        try use(store)
        let old = tenant.identitySecret
        #expect(try verifies(old))
        let expected = time(plus: Self.day)
        let rotated = try rotate()
        #expect(rotated.secret != old)
        #expect(rotated.secret.hasPrefix("bk_isec_"))
        #expect(rotated.previousExpiresAt == expected)

        for token in [false, true] {
            #expect(try verifies(old, token: token))
            #expect(try verifies(rotated.secret, token: token))
        }
        app.clock.advance(byMillis: Self.day - 1)
        #expect(try verifies(old))
        app.clock.advance(byMillis: 2)  // 24 h + 1 ms after the rotation
        for token in [false, true] {
            #expect(try !verifies(old, token: token))
            #expect(try verifies(rotated.secret, token: token))
        }
        #expect(try currentSecret().data?["previousExpiresAt"] == nil)
    }

    @Test(arguments: StoreKind.available) func aSecondRotationInsideTheWindowRetiresTheOldest(_ store: StoreKind) throws
    {
        try use(store)
        let first = tenant.identitySecret
        let second = try rotate()
        app.clock.advance(byMillis: 3_600_000)
        let expected = time(plus: Self.day)
        let third = try rotate()
        #expect(third.previousExpiresAt == expected)
        #expect(try !verifies(first))
        #expect(try !verifies(first, token: true))
        #expect(try verifies(second.secret))
        #expect(try verifies(third.secret))
        app.clock.advance(byMillis: Self.day + 1)
        #expect(try !verifies(second.secret))
        #expect(try verifies(third.secret))
    }

    @Test(arguments: StoreKind.available) func aProofMadeWithARetiredSecretIsRefusedEvenForAVerifiedUser(
        _ store: StoreKind
    ) throws {
        try use(store)
        let old = tenant.identitySecret
        #expect(try verifies(old, user: "user_1"))
        _ = try rotate()
        _ = try rotate()
        var headers = tenant.app
        headers["BuzzKit-Identity-Hash"] = tenant.identityHash("user_1", secret: old)
        expectError(
            try app.send(
                "PATCH", "/v1/subscribers/user_1/attributes", json: ["attributes": ["a": 1]], headers: headers),
            401, "invalid_identity_hash")
    }
}

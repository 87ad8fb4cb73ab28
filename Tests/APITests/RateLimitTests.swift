import API
import Foundation
import TestSupport
import Testing

/// The client key's token bucket (`clientKeyRatePerSecond`, `clientKeyBurst`), driven by the manual clock.
@Suite final class RateLimitTests {
    let app: InProcessApp
    let tenant: TestTenant
    let anon = newAnonymousID()

    init() throws {
        var configuration = ApplicationConfiguration()
        configuration.clientKeyRatePerSecond = 2
        configuration.clientKeyBurst = 3
        app = try InProcessApp(configuration: configuration)
        tenant = try app.createTenant()
    }
    deinit { app.close() }

    func call(_ headers: [String: String], event: String = randomAlphanumerics(8)) throws -> HTTPClient.Response {
        try app.send(
            "POST", "/v1/events", json: ["subscriberId": anon, "events": [["id": event, "name": "x"]]], headers: headers
        )
    }

    @Test func clientKeyIsLimitedAndRefillsWithTheClock() throws {
        for _ in 0..<3 { expectOK(try call(tenant.app)) }
        let limited = try call(tenant.app, event: "limited")
        expectError(limited, 429, "rate_limited")
        #expect(limited.header("Retry-After") == "1")
        // A refused call did nothing.
        let view = try app.send("GET", "/v1/subscribers/\(anon)", headers: tenant.backend)
        #expect(view.subscriber?["eventCount"] as? Int == 3)

        app.clock.advance(byMillis: 499)
        expectError(try call(tenant.app), 429, "rate_limited")
        app.clock.advance(byMillis: 1)  // half a second: one token at 2 a second
        expectOK(try call(tenant.app))
        expectError(try call(tenant.app), 429, "rate_limited")

        app.clock.advance(bySeconds: 60)  // full again, never more than the burst
        for _ in 0..<3 { expectOK(try call(tenant.app)) }
        expectError(try call(tenant.app), 429, "rate_limited")
    }

    @Test func backendKeysAreNotLimited() throws {
        for _ in 0..<3 { expectOK(try call(tenant.app)) }
        expectError(try call(tenant.app), 429, "rate_limited")
        for _ in 0..<20 {
            expectOK(try call(tenant.backend))
            expectOK(try call(tenant.workspace(app.workspaceKey)))
            expectOK(try app.send("GET", "/v1/tenant", headers: tenant.backend))
        }
    }

    @Test func eachClientKeyHasItsOwnBucket() throws {
        for _ in 0..<3 { expectOK(try call(tenant.app)) }
        expectError(try call(tenant.app), 429, "rate_limited")
        let other = try app.createTenant(name: "other")
        expectOK(
            try app.send(
                "POST", "/v1/events", json: ["subscriberId": anon, "events": [["id": "e", "name": "x"]]],
                headers: other.app))
    }

    @Test func retryAfterRoundsUpToWholeSeconds() throws {
        var configuration = ApplicationConfiguration()
        configuration.clientKeyRatePerSecond = 0.25
        configuration.clientKeyBurst = 1
        let slow = try InProcessApp(configuration: configuration)
        defer { slow.close() }
        let tenant = try slow.createTenant()
        let path = "/v1/subscribers/\(anon)/attributes"
        expectOK(try slow.send("PATCH", path, json: ["attributes": ["a": 1]], headers: tenant.app))
        let limited = try slow.send("PATCH", path, json: ["attributes": ["a": 2]], headers: tenant.app)
        expectError(limited, 429, "rate_limited")
        #expect(limited.header("Retry-After") == "4")
        slow.clock.advance(bySeconds: 2.5)
        #expect(
            try slow.send("PATCH", path, json: ["attributes": ["a": 2]], headers: tenant.app).header("Retry-After")
                == "2")
        slow.clock.advance(bySeconds: 1.5)
        expectOK(try slow.send("PATCH", path, json: ["attributes": ["a": 2]], headers: tenant.app))
    }
}

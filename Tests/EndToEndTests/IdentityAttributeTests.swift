import Foundation
import Glibc
import TestSupport
import Testing

/// API.md §7: attributes merge, provenance, protected keys, limits, no-op writes.
@Suite struct IdentityAttributeTests {
    private func attributes(_ s: IdentitySession, _ id: String) throws -> JSONDict {
        try #require(try s.subscriber(id)).object("attributes") ?? [:]
    }

    private func appPatch(_ s: IdentitySession, _ id: String, _ attributes: JSONDict) throws -> HTTPClient.Response {
        try s.app("PATCH", "/v1/subscribers/\(pathID(id))/attributes", ["attributes": attributes])
    }

    private func backendPatch(_ s: IdentitySession, _ id: String, _ attributes: JSONDict) throws -> HTTPClient.Response
    {
        try s.backend("PATCH", "/v1/subscribers/\(pathID(id))/attributes", ["attributes": attributes])
    }

    @Test(arguments: StoreKind.available) func callsMergeAndNeverReplace(_ store: StoreKind) throws {
        let s = try IdentitySession(store)
        let anon = newAnonymousID()
        #expect(try appPatch(s, anon, ["a": "text", "b": 1.5]).status == 200)
        #expect(try appPatch(s, anon, ["c": true, "d": [1, "two", NSNull()], "e": ["deep": ["x": 1]]]).status == 200)
        #expect(try appPatch(s, anon, ["a": "changed", "gone": NSNull()]).status == 200)  // null on an absent key
        let stored = try attributes(s, anon)
        #expect(Set(stored.keys) == ["a", "b", "c", "d", "e"])
        #expect(stored.string("a") == "changed")
        #expect(stored["b"] as? Double == 1.5)
        #expect(stored.bool("c") == true)
        #expect((stored["d"] as? [Any])?.count == 3)
        #expect(stored.object("e")?.object("deep")?.int("x") == 1)
        // PUT and identify merge too.
        try s.identify(["externalId": "ivy", "anonymousId": anon, "attributes": ["f": "from identify"]])
        try s.backend("PUT", "/v1/subscribers/ivy", ["attributes": ["g": "from backend"]])
        #expect(Set(try attributes(s, "ivy").keys) == ["a", "b", "c", "d", "e", "f", "g"])
        #expect(try s.app("PATCH", "/v1/subscribers/ivy/attributes", [:]).errorCode == "invalid_request")
    }

    @Test(arguments: StoreKind.available) func backendNullRemovesAppNullOnBackendKeysIsIgnored(_ store: StoreKind)
        throws
    {
        let s = try IdentitySession(store)
        try s.backend("PUT", "/v1/subscribers/jo", ["attributes": ["tier": "gold", "region": "eu", "temp": 1]])
        #expect(try appPatch(s, "jo", ["mood": "happy", "scratch": 1]).status == 200)

        // The backend removes with null, its own keys and the app's alike.
        let removed = try backendPatch(s, "jo", ["temp": NSNull(), "scratch": NSNull()])
        #expect(removed.status == 200)
        #expect(removed.warnings.isEmpty)
        #expect(Set(try attributes(s, "jo").keys) == ["tier", "region", "mood"])

        // The app may change a backend key, never remove one.
        let r = try appPatch(s, "jo", ["region": NSNull(), "tier": "platinum", "mood": NSNull()])
        #expect(r.status == 200)
        #expect(r.warnings == ["attribute_protected"])
        let stored = try attributes(s, "jo")
        #expect(stored.string("region") == "eu")
        #expect(stored.string("tier") == "platinum")
        #expect(stored["mood"] == nil, "the app removes its own keys")
        // Changed by the app, the key is still the backend's.
        let again = try appPatch(s, "jo", ["tier": NSNull()])
        #expect(again.warnings == ["attribute_protected"])
        #expect(try attributes(s, "jo").string("tier") == "platinum")
        // Through identify as well.
        let identify = try s.identify(["externalId": "jo", "attributes": ["region": NSNull()]])
        #expect(identify.status == 200)
        #expect(identify.warnings == ["attribute_protected"])
        #expect(try attributes(s, "jo").string("region") == "eu")
    }

    @Test(arguments: StoreKind.available) func protectedAttributesAreTheBackendsAlone(_ store: StoreKind) throws {
        let s = try IdentitySession(store)
        try s.settings(["protectedAttributes": ["plan", "credits"]])
        let anon = newAnonymousID()
        let r = try appPatch(s, anon, ["plan": "enterprise", "color": "red"])
        #expect(r.status == 200)
        #expect(r.warnings == ["attribute_protected"])
        #expect(try attributes(s, anon).string("color") == "red")
        #expect(try attributes(s, anon)["plan"] == nil)
        let identify = try s.identify(["externalId": "kai", "anonymousId": anon, "attributes": ["credits": 1_000_000]])
        #expect(identify.warnings == ["attribute_protected"])
        #expect(try attributes(s, "kai")["credits"] == nil)

        #expect(try backendPatch(s, "kai", ["plan": "basic", "credits": 5]).warnings.isEmpty)
        let change = try appPatch(s, "kai", ["plan": "enterprise", "credits": NSNull()])
        #expect(change.warnings == ["attribute_protected"])
        #expect(try attributes(s, "kai").string("plan") == "basic")
        #expect(try attributes(s, "kai").int("credits") == 5)
        // The backend keeps full control.
        #expect(try backendPatch(s, "kai", ["credits": NSNull()]).status == 200)
        #expect(try attributes(s, "kai")["credits"] == nil)
    }

    @Test(arguments: StoreKind.available) func dollarKeysBelongToTheServer(_ store: StoreKind) throws {
        let s = try IdentitySession(store)
        let anon = newAnonymousID()
        try s.app(
            "PUT", "/v1/subscribers/\(anon)/push-subscriptions/d1",
            ["token": "t1", "platform": "ios", "permission": "denied"])
        for attempt in [["$notificationPermission": "authorized"], ["$plan": "x", "ok": 1]] as [JSONDict] {
            for response in [try appPatch(s, anon, attempt), try backendPatch(s, anon, attempt)] {
                #expect(response.status == 400)
                #expect(response.errorCode == "invalid_attributes")
                #expect(response.errorDetails?.strings("keys") == attempt.keys.filter { $0.hasPrefix("$") })
            }
        }
        let stored = try attributes(s, anon)
        #expect(stored.string("$notificationPermission") == "denied")
        #expect(stored["ok"] == nil)
        #expect(
            try s.identify(["externalId": "lee", "anonymousId": anon, "attributes": ["$x": 1]]).errorCode
                == "invalid_attributes")
        #expect(
            try s.backend("PUT", "/v1/subscribers/lee", ["attributes": ["$x": 1]]).errorCode == "invalid_attributes")
        #expect(try s.subscriber("lee") == nil)
    }

    @Test(arguments: StoreKind.available) func limitsRefuseTheWholeCallNamingTheKeys(_ store: StoreKind) throws {
        let s = try IdentitySession(store)
        let anon = newAnonymousID()
        try s.sendEvents(anon, [makeEvent("e")])
        let before = try #require(try s.subscriber(anon))

        // 101 keys in one call.
        var many: JSONDict = [:]
        for i in 0..<101 { many["k\(i)"] = i }
        let tooMany = try appPatch(s, anon, many)
        #expect(tooMany.status == 400)
        #expect(tooMany.errorCode == "invalid_attributes")
        #expect(Set(tooMany.errorDetails?.strings("keys") ?? []) == Set(many.keys))
        // A 129-character key and a 1025-byte value, next to good ones.
        let longKey = String(repeating: "k", count: 129)
        let bigValue = String(repeating: "v", count: 1023)  // 1025 bytes as JSON with its quotes
        let bad = try appPatch(s, anon, [longKey: 1, "big": bigValue, "fine": "yes"])
        #expect(bad.status == 400)
        #expect(bad.errorCode == "invalid_attributes")
        #expect(Set(bad.errorDetails?.strings("keys") ?? []) == [longKey, "big"])
        for response in [
            try backendPatch(s, anon, [longKey: 1]),
            try s.identify(["externalId": "mo", "anonymousId": anon, "attributes": ["big": bigValue]]),
            try s.backend("PUT", "/v1/subscribers/mo", ["attributes": ["big": bigValue]]),
        ] {
            #expect(response.errorCode == "invalid_attributes")
        }
        let after = try #require(try s.subscriber(anon))
        #expect((after.object("attributes") ?? [:]).isEmpty, "nothing saved")
        #expect(after.string("updatedAt") == before.string("updatedAt"))
        #expect(try s.subscriber("mo") == nil)

        // Exactly at the limits is fine.
        let atLimit = try appPatch(s, anon, [String(repeating: "k", count: 128): String(repeating: "v", count: 1022)])
        #expect(atLimit.status == 200)
        var hundred: JSONDict = [:]
        for i in 0..<99 { hundred["k\(i)"] = i }
        #expect(try appPatch(s, anon, hundred).status == 200)
        #expect(try attributes(s, anon).count == 100)
        // The 101st stored key is refused, naming it; changing a stored key still works.
        let extra = try appPatch(s, anon, ["k0": "changed", "one-more": true])
        #expect(extra.errorCode == "invalid_attributes")
        #expect(extra.errorDetails?.strings("keys") == ["one-more"])
        #expect(try attributes(s, anon).int("k0") == 0)
        #expect(try appPatch(s, anon, ["k0": "changed"]).status == 200)
        // Removing one makes room. Server-kept $ keys do not count.
        try s.app(
            "PUT", "/v1/subscribers/\(anon)/push-subscriptions/d",
            ["token": "t", "platform": "ios", "permission": "authorized"])
        #expect(try appPatch(s, anon, ["k1": NSNull(), "one-more": true]).status == 200)
        #expect(try attributes(s, anon).count == 101)
    }

    @Test(arguments: StoreKind.available) func tenantLimitsApply(_ store: StoreKind) throws {
        let s = try IdentitySession(store)
        try s.settings(["attributeLimits": ["maxKeys": 3, "maxKeyLength": 4, "maxValueBytes": 8]])
        #expect(try appPatch(s, "nia", ["abcd": "123456"]).status == 200)
        #expect(try appPatch(s, "nia", ["abcde": 1]).errorDetails?.strings("keys") == ["abcde"])
        #expect(try appPatch(s, "nia", ["v": "1234567"]).errorDetails?.strings("keys") == ["v"])
        #expect(try appPatch(s, "nia", ["b": 1, "c": 2]).status == 200)
        #expect(try appPatch(s, "nia", ["d": 1]).errorDetails?.strings("keys") == ["d"])
        #expect(Set(try attributes(s, "nia").keys) == ["abcd", "b", "c"])
    }

    @Test(arguments: StoreKind.available) func theEmailAttributeIsAnAddress(_ store: StoreKind) throws {
        let s = try IdentitySession(store)
        try s.identify(["externalId": "pam", "email": "pam@example.com"])
        let before = try #require(try s.subscriber("pam"))
        for value in [42, ["x": 1], true, "not an address", ""] as [Any] {
            for response in [
                try s.identify(["externalId": "pam", "attributes": ["email": value]]),
                try appPatch(s, "pam", ["email": value]),
                try backendPatch(s, "pam", ["email": value]),
                try s.backend("PUT", "/v1/subscribers/pam", ["attributes": ["email": value]]),
            ] {
                #expect(response.status == 400, "\(value)")
                #expect(response.errorCode == "invalid_email", "\(value)")
            }
        }
        let after = try #require(try s.subscriber("pam"))
        #expect(after.string("email") == "pam@example.com")
        #expect(after.object("attributes")?.string("email") == "pam@example.com")
        #expect(after.string("updatedAt") == before.string("updatedAt"))
        // The backend removes it with null, and the address goes with it.
        let removed = try backendPatch(s, "pam", ["email": NSNull()])
        #expect(removed.status == 200)
        #expect(removed.subscriber?.string("email") == nil)
        #expect(removed.subscriber?.object("attributes")?["email"] == nil)
        #expect(removed.subscriber?.object("channels")?.isEmpty == true)
    }

    @Test(arguments: StoreKind.available) func aCallThatChangesNothingChangesNothing(_ store: StoreKind) throws {
        let s = try IdentitySession(store)
        let anon = newAnonymousID()
        let values: JSONDict = [
            "s": "x", "n": 42, "f": 2.5, "b": false, "a": [1, 2, 3], "o": ["k": "v", "z": [true]],
        ]
        #expect(try appPatch(s, anon, values).status == 200)
        try s.identify(["externalId": "ola", "anonymousId": anon, "email": "ola@example.com", "attributes": values])
        // The backend claims the email too, so re-sending it below is a true no-op (a backend write
        // of an app-set key changes who owns it, which is a change).
        try s.backend("PUT", "/v1/subscribers/ola", ["email": "ola@example.com", "attributes": ["owner": "backend"]])
        let before = try #require(try s.subscriber("ola"))
        usleep(5_000)
        let calls: [HTTPClient.Response] = [
            try appPatch(s, "ola", values),
            try appPatch(s, anon, ["s": "x", "missing": NSNull()]),
            try s.identify(["externalId": "ola", "anonymousId": anon, "email": "ola@example.com", "attributes": values]
            ),
            try s.identify(["externalId": "ola", "attributes": ["email": "ola@example.com"]]),
            try s.backend(
                "PUT", "/v1/subscribers/ola", ["email": "ola@example.com", "attributes": ["owner": "backend"]]),
            try backendPatch(s, "ola", ["owner": "backend"]),
            try s.app("PUT", "/v1/subscribers/ola/preferences", ["topics": [:]]),
        ]
        for (i, response) in calls.enumerated() {
            #expect(response.status == 200, "call \(i): \(response.text)")
            #expect(response.subscriber?.string("updatedAt") == before.string("updatedAt"), "call \(i)")
        }
        #expect(try s.subscriber("ola")?.string("updatedAt") == before.string("updatedAt"))
        // A real change moves updatedAt.
        let changed = try appPatch(s, "ola", ["s": "y"])
        #expect(changed.subscriber?.string("updatedAt") != before.string("updatedAt"))
    }
}

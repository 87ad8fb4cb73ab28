import Foundation
import TestSupport
import Testing

/// API.md §3: which ids are accepted where, and that a refused call changes nothing.
@Suite struct IdentityIDValidationTests {
    static let placeholders = [
        "null", "nil", "none", "undefined", "nan", "0", "-1", "anonymous", "guest", "unknown", "[object object]",
        "true", "false", "id", "user_id", "na", "all", "00000000-0000-0000-0000-000000000000",
    ]

    /// An anonymous subscriber with an event and an attribute, to check refusals leave it alone.
    private func anonymousWitness(_ s: IdentitySession) throws -> (id: String, before: JSONDict) {
        let anon = newAnonymousID()
        try s.sendEvents(anon, [makeEvent("w1")])
        #expect(
            try s.app("PATCH", "/v1/subscribers/\(anon)/attributes", ["attributes": ["plan": "trial"]]).status == 200)
        return (anon, try #require(try s.subscriber(anon)))
    }

    private func expectUnchanged(_ s: IdentitySession, _ witness: (id: String, before: JSONDict)) throws {
        let after = try #require(try s.subscriber(witness.id))
        #expect(after.string("id") == witness.id)
        #expect(after.bool("anonymous") == true)
        #expect(after.strings("aliases").isEmpty)
        #expect(after.int("eventCount") == 1)
        #expect(after.string("updatedAt") == witness.before.string("updatedAt"))
        #expect(
            NSDictionary(dictionary: after.object("attributes") ?? [:]) == NSDictionary(dictionary: ["plan": "trial"]))
        #expect(try s.timeline(witness.id).map { $0.string("id") } == ["w1"])
        // No other subscriber appeared.
        #expect(try s.listAll().map { $0.string("id") } == [witness.id])
    }

    private func expectInvalidExternalID(_ s: IdentitySession, _ id: String, anonymousID: String) throws {
        let identify = try s.identify(["externalId": id, "anonymousId": anonymousID, "attributes": ["x": 1]])
        #expect(identify.status == 400, "identify \(id.debugDescription)")
        #expect(identify.errorCode == "invalid_external_id", "identify \(id.debugDescription)")
        // A subscriberId may be either kind of id, so anon_… there is judged as an anonymous id.
        if !id.hasPrefix("anon_") {
            let events = try s.app("POST", "/v1/events", ["subscriberId": id, "events": [makeEvent("x")]])
            #expect(events.errorCode == "invalid_external_id", "events \(id.debugDescription)")
        }
        guard !id.isEmpty else { return }  // an empty path segment is another route
        let upsert = try s.backend("PUT", "/v1/subscribers/\(pathID(id))", ["attributes": ["x": 1]])
        #expect(upsert.status == 400, "PUT \(id.debugDescription)")
        #expect(upsert.errorCode == "invalid_external_id", "PUT \(id.debugDescription)")
        let merge = try s.backend("POST", "/v1/subscribers/\(pathID(id))/merge", ["anonymousId": anonymousID])
        #expect(merge.errorCode == "invalid_external_id", "merge \(id.debugDescription)")
    }

    @Test(arguments: StoreKind.available) func placeholdersAreRefusedInAnyCaseAndQuoted(_ store: StoreKind) throws {
        let s = try IdentitySession(store)
        let witness = try anonymousWitness(s)
        for placeholder in Self.placeholders {
            let variants = [
                placeholder, placeholder.uppercased(), placeholder.capitalized, "\"\(placeholder)\"",
                "'\(placeholder.uppercased())'", "`\(placeholder)`",
            ]
            for id in Set(variants) {
                try expectInvalidExternalID(s, id, anonymousID: witness.id)
            }
        }
        try expectUnchanged(s, witness)
        // Near misses are ordinary ids.
        for id in ["nullable", "guest_7", "0001", "\"guest", "user-id", "none of them"] {
            let r = try s.identify(["externalId": id])
            #expect(r.status == 200, "\(id): \(r.text)")
        }
    }

    @Test(arguments: StoreKind.available) func tenantBlockedIdsAreRefusedOnlyInThatTenant(_ store: StoreKind) throws {
        let s = try IdentitySession(store)
        let other = try IdentitySession(store)
        try s.settings(["blockedExternalIds": ["test-user", "DemoUser"]])
        let witness = try anonymousWitness(s)
        for id in ["test-user", "TEST-USER", "demouser", "\"DemoUser\"", "'test-user'"] {
            try expectInvalidExternalID(s, id, anonymousID: witness.id)
        }
        try expectUnchanged(s, witness)
        #expect(try other.identify(["externalId": "test-user"]).status == 200)
        #expect(try other.backend("PUT", "/v1/subscribers/DemoUser", ["attributes": [:]]).status == 201)
    }

    @Test(arguments: StoreKind.available) func nonLatinIdsAreAcceptedAndReadBack(_ store: StoreKind) throws {
        let s = try IdentitySession(store)
        for id in ["用户_42", "пользователь", "مستخدم", "ユーザー", "Zoë Ødegård", "👩‍💻dev", "a/b?c#d%e"] {
            let anon = newAnonymousID()
            try s.sendEvents(anon, [makeEvent("e-\(id)")])
            let r = try s.identify(["externalId": id, "anonymousId": anon])
            #expect(r.status == 200, "\(id): \(r.text)")
            #expect(r.subscriber?.string("id") == id)
            #expect(r.mergeShape == "rename")
            #expect(try s.subscriber(id)?.string("id") == id)
            #expect(try s.subscriber(anon)?.string("id") == id)
            #expect(try s.timeline(id).first?.string("id") == "e-\(id)")
            let put = try s.backend("PUT", "/v1/subscribers/\(pathID(id))", ["attributes": ["script": id]])
            #expect(put.status == 200)
            #expect(put.subscriber?.object("attributes")?.string("script") == id)
        }
    }

    @Test(arguments: StoreKind.available) func lengthIsCountedInUnicodeScalars(_ store: StoreKind) throws {
        let s = try IdentitySession(store)
        let witness = try anonymousWitness(s)
        for ok in [String(repeating: "a", count: 255), String(repeating: "用", count: 255), "x"] {
            let r = try s.identify(["externalId": ok])
            #expect(r.status == 200, "\(ok.unicodeScalars.count) scalars")
            #expect(try s.subscriber(ok)?.string("id") == ok)
        }
        // 128 characters but 256 scalars (e + combining acute accent).
        let combining = String(repeating: "e\u{301}", count: 128)
        #expect(combining.count == 128)
        for tooLong in [String(repeating: "a", count: 256), String(repeating: "用", count: 256), combining] {
            try expectInvalidExternalID(s, tooLong, anonymousID: witness.id)
        }
        #expect(try s.listAll().count == 4)  // the three above and the witness
        try #require(try s.subscriber(witness.id)?.bool("anonymous") == true)
    }

    @Test(arguments: StoreKind.available) func controlCharactersAndOuterWhitespaceAreRefused(_ store: StoreKind) throws
    {
        let s = try IdentitySession(store)
        let witness = try anonymousWitness(s)
        let refused = [
            "", " ", "   ", "\t", "user\u{0}1", "user\t1", "user\n1", "user\r1", "a\u{7F}b", "a\u{85}b", "a\u{9F}b",
            "\u{1B}[31m", " user", "user ", "\u{A0}user", "user\u{3000}", "\u{2003}user", "user\n",
        ]
        for id in refused {
            try expectInvalidExternalID(s, id, anonymousID: witness.id)
        }
        try expectUnchanged(s, witness)
        // Whitespace inside is fine.
        let inner = try s.identify(["externalId": "Ada Lovelace"])
        #expect(inner.status == 200)
        #expect(try s.subscriber("Ada Lovelace") != nil)
    }

    @Test(arguments: StoreKind.available) func anonPrefixRules(_ store: StoreKind) throws {
        let s = try IdentitySession(store)
        let witness = try anonymousWitness(s)
        let wellFormed = newAnonymousID()
        // Where an external id is expected, every anon_… is invalid_external_id.
        for id in [wellFormed, witness.id, "anon_", "anon_x", "anon_" + String(repeating: "a", count: 30)] {
            try expectInvalidExternalID(s, id, anonymousID: witness.id)
        }
        // Where an anonymous id is expected, a malformed anon_… is invalid_anonymous_id.
        let malformed = [
            "anon_", "anon_short", "anon_" + String(repeating: "a", count: 20),
            "anon_" + String(repeating: "a", count: 22), "anon_" + String(repeating: "a", count: 20) + "!",
            "anon_" + String(repeating: "a", count: 20) + "é", "anon_ " + String(repeating: "a", count: 20),
        ]
        for id in malformed {
            let identify = try s.identify(["externalId": "someone", "anonymousId": id])
            #expect(identify.status == 400)
            #expect(identify.errorCode == "invalid_anonymous_id", "anonymousId \(id)")
            let merge = try s.backend("POST", "/v1/subscribers/\(witness.id)/merge", ["anonymousId": id])
            #expect(merge.status == 400)
            let read = try s.backend("GET", "/v1/subscribers/\(pathID(id))")
            #expect(read.errorCode == "invalid_anonymous_id", "GET \(id)")
            let events = try s.app("POST", "/v1/events", ["subscriberId": id, "events": [makeEvent("x")]])
            #expect(events.errorCode == "invalid_anonymous_id", "events \(id)")
            let attributes = try s.app("PATCH", "/v1/subscribers/\(pathID(id))/attributes", ["attributes": ["a": 1]])
            #expect(attributes.errorCode == "invalid_anonymous_id", "attributes \(id)")
            let push = try s.app(
                "PUT", "/v1/subscribers/\(pathID(id))/push-subscriptions/dev1", ["token": "t", "platform": "ios"])
            #expect(push.errorCode == "invalid_anonymous_id", "push \(id)")
        }
        // `anonymousId` must be an anonymous id, whatever it starts with.
        let notAnon = try s.identify(["externalId": "someone", "anonymousId": "user_1"])
        #expect(notAnon.errorCode == "invalid_anonymous_id")
        #expect(try s.subscriber("someone") == nil)
        try expectUnchanged(s, witness)
        // The prefix is case-sensitive like every id: ANON_… is an ordinary external id.
        let upper = "ANON_" + randomAlphanumerics(21)
        #expect(try s.identify(["externalId": upper]).status == 200)
        #expect(try s.subscriber(upper)?.bool("anonymous") == false)
    }

    @Test(arguments: StoreKind.available) func idsAreCaseSensitive(_ store: StoreKind) throws {
        let s = try IdentitySession(store)
        #expect(try s.backend("PUT", "/v1/subscribers/Ada", ["attributes": ["who": "upper"]]).status == 201)
        #expect(try s.backend("PUT", "/v1/subscribers/ada", ["attributes": ["who": "lower"]]).status == 201)
        #expect(try s.subscriber("Ada")?.object("attributes")?.string("who") == "upper")
        #expect(try s.subscriber("ada")?.object("attributes")?.string("who") == "lower")
        #expect(try s.subscriber("ADA") == nil)
        let lower = "anon_" + String(repeating: "a", count: 21)
        let upper = "anon_" + String(repeating: "A", count: 21)
        try s.sendEvents(lower, [makeEvent("1")])
        try s.sendEvents(upper, [makeEvent("1"), makeEvent("2")])
        #expect(try s.subscriber(lower)?.int("eventCount") == 1)
        #expect(try s.subscriber(upper)?.int("eventCount") == 2)
        // Identifying "ada" with the lower-case anon id leaves "Ada" and the upper-case one alone.
        let r = try s.identify(["externalId": "ada", "anonymousId": lower])
        #expect(r.mergeShape == "absorb")
        #expect(try s.subscriber("Ada")?.int("eventCount") == 0)
        #expect(try s.subscriber(upper)?.bool("anonymous") == true)
        #expect(try s.subscriber(lower)?.string("id") == "ada")
    }

    @Test(arguments: StoreKind.available) func anInvalidFieldAnywhereInIdentifyChangesNothing(_ store: StoreKind) throws
    {
        let s = try IdentitySession(store)
        let witness = try anonymousWitness(s)
        let bad: [JSONDict] = [
            ["externalId": "carol", "anonymousId": witness.id, "email": "not-an-email"],
            ["externalId": "carol", "anonymousId": witness.id, "attributes": ["email": "still not one"]],
            ["externalId": "carol", "anonymousId": witness.id, "attributes": ["$plan": "x"]],
            [
                "externalId": "carol", "anonymousId": witness.id,
                "attributes": ["big": String(repeating: "x", count: 2000)],
            ],
            ["externalId": "carol", "anonymousId": witness.id, "subscribe": ["email": "yes"]],
            ["externalId": "carol", "anonymousId": witness.id, "identityHash": String(repeating: "0", count: 64)],
            ["externalId": "carol", "anonymousId": witness.id, "unknownField": 1],
        ]
        for body in bad {
            let r = try s.identify(body)
            #expect(r.status == 400 || r.status == 401, "\(body): \(r.status)")
            #expect(r.errorCode != nil)
        }
        #expect(try s.subscriber("carol") == nil)
        try expectUnchanged(s, witness)
    }
}

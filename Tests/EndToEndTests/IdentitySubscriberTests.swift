import Foundation
import TestSupport
import Testing

/// API.md §5: the backend's subscriber endpoints.
@Suite struct IdentitySubscriberTests {
    @Test(arguments: StoreKind.available) func putIsAnIdempotentUpsert(_ store: StoreKind) throws {
        let s = try IdentitySession(store)
        let created = try s.backend(
            "PUT", "/v1/subscribers/user_42", ["email": "ada@example.com", "attributes": ["plan": "pro"]])
        #expect(created.status == 201)
        let first = try #require(created.subscriber)
        #expect(first.string("id") == "user_42")
        #expect(first.bool("anonymous") == false)
        #expect(first.bool("verified") == false)
        #expect(first.string("email") == "ada@example.com")
        #expect(first.object("attributes")?.string("plan") == "pro")
        #expect(first.object("attributes")?.string("email") == "ada@example.com")

        let again = try s.backend(
            "PUT", "/v1/subscribers/user_42", ["email": "ada@example.com", "attributes": ["plan": "pro"]])
        #expect(again.status == 200)
        #expect(again.subscriber?.string("createdAt") == first.string("createdAt"))
        #expect(again.subscriber?.string("updatedAt") == first.string("updatedAt"))

        let updated = try s.backend("PUT", "/v1/subscribers/user_42", ["attributes": ["seats": 3]])
        #expect(updated.status == 200)
        let attributes = updated.subscriber?.object("attributes")
        #expect(attributes?.string("plan") == "pro")
        #expect(attributes?.int("seats") == 3)
        #expect(try s.listAll().count == 1)

        // The body is checked like any other.
        #expect(try s.backend("PUT", "/v1/subscribers/user_43", ["email": "nope"]).errorCode == "invalid_email")
        #expect(try s.backend("PUT", "/v1/subscribers/user_43", ["plan": "pro"]).errorCode == "invalid_request")
        #expect(try s.subscriber("user_43") == nil)
    }

    @Test(arguments: StoreKind.available) func getByIdAndByAlias(_ store: StoreKind) throws {
        let s = try IdentitySession(store)
        let anon = newAnonymousID()
        try s.sendEvents(anon, [makeEvent("e1")])
        let direct = try s.backend("GET", "/v1/subscribers/\(anon)")
        #expect(direct.status == 200)
        #expect(direct.subscriber?.bool("anonymous") == true)
        #expect(direct.metadata?["resolvedFrom"] == nil)

        try #require(try s.identify(["externalId": "grace", "anonymousId": anon]).mergeShape == "rename")
        let byAlias = try s.backend("GET", "/v1/subscribers/\(anon)")
        #expect(byAlias.status == 200)
        #expect(byAlias.subscriber?.string("id") == "grace")
        #expect(byAlias.subscriber?.strings("aliases") == [anon])
        #expect(byAlias.metadata?["resolvedFrom"] as? String == anon)
        let byID = try s.backend("GET", "/v1/subscribers/grace")
        #expect(byID.metadata?["resolvedFrom"] == nil)

        let missing = try s.backend("GET", "/v1/subscribers/nobody")
        #expect(missing.status == 404)
        #expect(missing.errorCode == "subscriber_not_found")
        #expect(try s.backend("GET", "/v1/subscribers/\(newAnonymousID())").status == 404)
    }

    @Test(arguments: StoreKind.available) func listPagesStablyWithFilters(_ store: StoreKind) throws {
        let s = try IdentitySession(store)
        var anonymous: [String] = []
        var identified: [String] = []
        var verified: [String] = []
        for i in 0..<8 {
            let anon = newAnonymousID()
            try s.sendEvents(anon, [makeEvent("e\(i)")])
            anonymous.append(anon)
        }
        for i in 0..<12 {
            let id = "member_\(i)"
            if i % 3 == 0 {
                let r = try s.identify(["externalId": id, "identityHash": try s.identityHash(id)])
                #expect(r.subscriber?.bool("verified") == true)
                verified.append(id)
            } else {
                #expect(try s.backend("PUT", "/v1/subscribers/\(id)", ["attributes": ["i": i]]).status == 201)
            }
            identified.append(id)
        }

        // Page through 7 at a time; a subscriber created mid-way shows up once, at the end.
        var seen: [String] = []
        var cursor: String?
        var pages = 0
        repeat {
            let query = cursor.map { "limit=7&cursor=\($0)" } ?? "limit=7"
            let r = try s.backend("GET", "/v1/subscribers?\(query)")
            #expect(r.status == 200)
            let page = r.data?.objects("subscribers") ?? []
            #expect(page.count <= 7)
            seen += page.compactMap { $0.string("id") }
            cursor = r.data?["nextCursor"] as? String
            if pages == 1 { try s.backend("PUT", "/v1/subscribers/late_comer", ["attributes": [:]]) }
            pages += 1
        } while cursor != nil && pages < 20
        let all = anonymous + identified + ["late_comer"]
        #expect(seen == all, "creation order, no duplicates, none missing")
        #expect(Set(seen).count == seen.count)

        // Same answer every time.
        #expect(try s.listAll(limit: 5).map { $0.string("id")! } == all)
        #expect(try s.listAll("anonymous=true", limit: 3).map { $0.string("id")! } == anonymous)
        #expect(try s.listAll("anonymous=false", limit: 4).map { $0.string("id")! } == identified + ["late_comer"])
        #expect(try s.listAll("verified=true", limit: 2).map { $0.string("id")! } == verified)
        #expect(
            try s.listAll("anonymous=false&verified=false", limit: 1000).map { $0.string("id")! }
                == identified.filter { !verified.contains($0) } + ["late_comer"])
        let summary = try #require(try s.listAll("verified=true").first)
        #expect(summary.bool("verified") == true)
        #expect(summary.string("createdAt") != nil)

        // Limits.
        let last = try s.backend("GET", "/v1/subscribers?limit=1000")
        #expect(last.data?.objects("subscribers").count == all.count)
        #expect(last.data?["nextCursor"] is NSNull)
        for bad in ["limit=0", "limit=1001", "limit=-1", "limit=ten", "cursor=garbage", "anonymous=yes"] {
            let r = try s.backend("GET", "/v1/subscribers?\(bad)")
            #expect(r.status == 400, "\(bad)")
            #expect(r.errorCode == "invalid_request", "\(bad)")
        }
        // The default page is 100.
        #expect(try s.backend("GET", "/v1/subscribers").data?.objects("subscribers").count == all.count)
    }

    @Test(arguments: StoreKind.available) func deleteErasesThePersonEverywhere(_ store: StoreKind) throws {
        let s = try IdentitySession(store)
        let first = newAnonymousID()
        let second = newAnonymousID()
        try s.sendEvents(first, [makeEvent("a1"), makeEvent("a2")])
        try s.app(
            "PUT", "/v1/subscribers/\(first)/push-subscriptions/phone", ["token": "tok-phone", "platform": "ios"])
        try s.sendEvents(second, [makeEvent("b1")])
        try s.app(
            "PUT", "/v1/subscribers/\(second)/push-subscriptions/tablet", ["token": "tok-tablet", "platform": "ios"])
        try s.app("PUT", "/v1/subscribers/\(second)/preferences", ["topics": ["news": false]])
        try #require(
            try s.identify(["externalId": "hopper", "anonymousId": first, "email": "g@example.com"]).mergeShape
                == "rename")
        try #require(try s.identify(["externalId": "hopper", "anonymousId": second]).mergeShape == "absorb")
        let before = try #require(try s.subscriber("hopper"))
        #expect(before.objects("pushSubscriptions").count == 2)
        #expect(before.int("eventCount") == 5)
        let bystander = newAnonymousID()
        try s.sendEvents(bystander, [makeEvent("z")])

        // Through an alias.
        let deleted = try s.backend("DELETE", "/v1/subscribers/\(second)")
        #expect(deleted.status == 200)
        #expect(deleted.data?.bool("deleted") == true)
        for id in ["hopper", first, second] {
            #expect(try s.backend("GET", "/v1/subscribers/\(id)").status == 404, "\(id)")
            #expect(try s.backend("GET", "/v1/subscribers/\(id)/events").status == 404, "\(id)")
            let again = try s.backend("DELETE", "/v1/subscribers/\(id)")
            #expect(again.status == 404, "\(id)")
            #expect(again.errorCode == "subscriber_not_found")
        }
        #expect(try s.listAll().map { $0.string("id") } == [bystander])

        // The ids are free again and nothing of the old person comes back with them.
        let reborn = try #require(try s.identify(["externalId": "hopper"]).subscriber)
        #expect(reborn.int("eventCount") == 0)
        #expect(reborn.strings("aliases").isEmpty)
        #expect(reborn.objects("pushSubscriptions").isEmpty)
        #expect(reborn.object("preferences")?.isEmpty == true)
        #expect(reborn.object("attributes")?.isEmpty == true)
        #expect(reborn.string("email") == nil)
        try s.sendEvents(first, [makeEvent("a1")])
        let fresh = try #require(try s.subscriber(first))
        #expect(fresh.bool("anonymous") == true)
        #expect(fresh.string("id") == first)
        #expect(try s.timeline(first).map { $0.string("id") } == ["a1"])
        // The old tokens are gone: logging them out anywhere finds nothing.
        #expect(try s.app("DELETE", "/v1/subscribers/hopper/push-subscriptions/phone").data?.bool("deleted") == false)
    }

    @Test(arguments: StoreKind.available) func allowAnonymousOffRefusesAnonymousAppCalls(_ store: StoreKind) throws {
        let s = try IdentitySession(store)
        let known = newAnonymousID()
        try s.sendEvents(known, [makeEvent("before")])
        try s.settings(["allowAnonymous": false])
        let unseen = newAnonymousID()
        for id in [known, unseen] {
            let events = try s.app("POST", "/v1/events", ["subscriberId": id, "events": [makeEvent("after")]])
            #expect(events.status == 401)
            #expect(events.errorCode == "identity_verification_required")
            let attributes = try s.app("PATCH", "/v1/subscribers/\(id)/attributes", ["attributes": ["a": 1]])
            #expect(attributes.errorCode == "identity_verification_required")
            let push = try s.app(
                "PUT", "/v1/subscribers/\(id)/push-subscriptions/d", ["token": "t-\(id)", "platform": "ios"])
            #expect(push.errorCode == "identity_verification_required")
        }
        #expect(try s.subscriber(unseen) == nil)
        #expect(try s.timeline(known).map { $0.string("id") } == ["before"])
        // The backend still sees it, and identify (which names an external id) still merges it.
        let merged = try s.identify(["externalId": "rita", "anonymousId": known])
        #expect(merged.mergeShape == "rename")
        #expect(try s.sendEvents(known, [makeEvent("after")]).accepted == 1)
        #expect(try s.timeline("rita").count == 3)
    }
}

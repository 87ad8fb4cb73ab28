import Foundation
import Glibc
import TestSupport
import Testing

/// API.md §6: identify and the three merge shapes, through HTTP. The tests whose outcome depends
/// on which write is newer run in process on a manual clock, so their order is exact, not timed.
@Suite struct IdentityMergeTests {

    private func markers(_ timeline: [JSONDict]) -> [JSONDict] {
        timeline.filter { $0.string("name") == "$subscriber.merged" }
    }

    @Test(arguments: StoreKind.available) func renameKeepsTheRowAndMovesNothing(_ store: StoreKind) throws {
        let s = try IdentitySession(store)
        let anon = newAnonymousID()
        try s.sendEvents(
            anon,
            [
                makeEvent("a", timestamp: isoStamp(1000)), makeEvent("b", timestamp: isoStamp(2000)),
                makeEvent("c", "$session.start"),
            ])
        try s.app("PATCH", "/v1/subscribers/\(anon)/attributes", ["attributes": ["onboarding": "done"]])
        try s.app("PUT", "/v1/subscribers/\(anon)/push-subscriptions/dev1", ["token": "tok1", "platform": "ios"])
        try s.app("PUT", "/v1/subscribers/\(anon)/preferences", ["topics": ["news": false]])
        let before = try #require(try s.subscriber(anon))
        let eventsBefore = try s.timeline(anon)

        let r = try s.identify(["externalId": "ada", "anonymousId": anon])
        #expect(r.status == 200)
        #expect(r.mergeShape == "rename")
        #expect((r.data?.object("merge"))?.string("from") == anon)
        #expect(r.warnings.isEmpty)
        let after = try #require(r.subscriber)
        #expect(after.string("id") == "ada")
        #expect(after.bool("anonymous") == false)
        #expect(after.string("createdAt") == before.string("createdAt"))
        #expect(after.strings("aliases") == [anon])
        #expect(after.object("attributes")?.string("onboarding") == "done")
        #expect(after.objects("pushSubscriptions").map { $0.string("deviceId") } == ["dev1"])
        #expect(after.object("preferences")?.object("news")?.bool("subscribed") == false)
        #expect(
            after.object("preferences")?.object("news")?.string("updatedAt")
                == before.object("preferences")?.object("news")?.string("updatedAt"))

        // Same events under the same seqs, then one marker.
        let timeline = try s.timeline("ada")
        #expect(timeline.count == 4)
        for (old, new) in zip(eventsBefore, timeline) {
            #expect(old.int("seq") == new.int("seq"))
            #expect(old.string("id") == new.string("id"))
            #expect(old.string("timestamp") == new.string("timestamp"))
            #expect(old.string("receivedAt") == new.string("receivedAt"))
        }
        let marker = try #require(timeline.last)
        #expect(marker.string("name") == "$subscriber.merged")
        #expect(marker.int("seq") == 4)
        let properties = try #require(marker.object("properties"))
        #expect(properties.string("from") == anon)
        #expect(properties.string("shape") == "rename")
        #expect(properties.int("eventsMoved") == 0)
        #expect(try s.listAll("anonymous=true").isEmpty)
        #expect(try s.listAll().count == 1)
    }

    @Test(arguments: StoreKind.available) func absorbMovesEverythingOntoTheIdentifiedTimeline(_ store: StoreKind) throws
    {
        let s = try IdentitySession(inProcess: try InProcessApp(store: store))
        // The identified person: backend attributes, own events, preferences.
        #expect(
            try s.backend("PUT", "/v1/subscribers/ada", ["attributes": ["plan": "pro", "team": "core"]]).status == 201)
        try s.sendEvents(
            "ada", [makeEvent("own-1", timestamp: isoStamp(50_000)), makeEvent("own-2", timestamp: isoStamp(60_000))])
        try s.app("PUT", "/v1/subscribers/ada/preferences", ["topics": ["news": true]])
        s.tick()
        // The second device, anonymous: older timestamps than ada's events, on purpose.
        let anon = newAnonymousID()
        try s.sendEvents(
            anon,
            [
                makeEvent("dev-1", timestamp: isoStamp(1_000), properties: ["step": 1]),
                makeEvent("dev-2", timestamp: isoStamp(3_000), properties: ["step": 2]),
                makeEvent("dev-3", timestamp: isoStamp(2_000), properties: ["nested": ["a": [1, 2]]]),
            ])
        // news: newer here
        try s.app("PUT", "/v1/subscribers/\(anon)/preferences", ["topics": ["news": false, "promo": true]])
        s.tick()
        try s.app("PUT", "/v1/subscribers/ada/preferences", ["topics": ["promo": false]])  // promo: newer on ada
        s.tick()
        try s.app("PUT", "/v1/subscribers/\(anon)/preferences", ["topics": ["digest": true]])  // only on the device
        try s.app("PATCH", "/v1/subscribers/\(anon)/attributes", ["attributes": ["plan": "free", "color": "blue"]])
        try s.app("PUT", "/v1/subscribers/\(anon)/push-subscriptions/phone", ["token": "tok-phone", "platform": "ios"])
        let anonEvents = try s.timeline(anon)
        let adaBefore = try #require(try s.subscriber("ada"))

        let r = try s.identify(["externalId": "ada", "anonymousId": anon])
        #expect(r.status == 200)
        #expect(r.mergeShape == "absorb")
        #expect(r.data?.object("merge")?.string("from") == anon)
        let ada = try #require(r.subscriber)
        #expect(ada.string("createdAt") == adaBefore.string("createdAt"))
        #expect(ada.strings("aliases") == [anon])
        #expect(ada.objects("pushSubscriptions").map { $0.string("deviceId") } == ["phone"])
        let attributes = try #require(ada.object("attributes"))
        #expect(attributes.string("plan") == "pro", "the identified value wins")
        #expect(attributes.string("team") == "core")
        #expect(attributes.string("color") == "blue", "the device fills what was missing")
        let preferences = try #require(ada.object("preferences"))
        #expect(preferences.object("news")?.bool("subscribed") == false, "the device's newer choice wins")
        #expect(preferences.object("promo")?.bool("subscribed") == false, "ada's newer choice wins")
        #expect(preferences.object("digest")?.bool("subscribed") == true)

        // Ada's events, then the device's in their own order with their own ids and times, then the marker.
        let timeline = try s.timeline("ada")
        #expect(timeline.map { $0.int("seq")! } == Array(1...6))
        #expect(timeline.map { $0.string("id")! }.prefix(5) == ["own-1", "own-2", "dev-1", "dev-2", "dev-3"])
        for (original, copy) in zip(anonEvents, timeline[2..<5]) {
            #expect(copy.string("id") == original.string("id"))
            #expect(copy.string("name") == original.string("name"))
            #expect(copy.string("timestamp") == original.string("timestamp"))
            #expect(copy.string("receivedAt") == original.string("receivedAt"))
            #expect(
                NSDictionary(dictionary: copy.object("properties") ?? [:])
                    == NSDictionary(dictionary: original.object("properties") ?? [:]))
        }
        #expect(timeline[4].object("properties")?.object("nested") != nil)
        let marker = try #require(timeline.last)
        #expect(marker.string("name") == "$subscriber.merged")
        #expect(marker.object("properties")?.string("from") == anon)
        #expect(marker.object("properties")?.string("shape") == "absorb")
        #expect(marker.object("properties")?.int("eventsMoved") == 3)
        #expect(ada.int("eventCount") == 6)

        // The anonymous subscriber is retired; its id reaches ada.
        #expect(try s.listAll().map { $0.string("id") } == ["ada"])
        let viaAlias = try s.backend("GET", "/v1/subscribers/\(anon)")
        #expect(viaAlias.subscriber?.string("id") == "ada")
        #expect(viaAlias.metadata?["resolvedFrom"] as? String == anon)
        #expect(try s.timeline(anon).count == 6)
    }

    @Test(arguments: StoreKind.available) func retryIsANoOp(_ store: StoreKind) throws {
        let s = try IdentitySession(inProcess: try InProcessApp(store: store))
        let renamed = newAnonymousID()
        let absorbed = newAnonymousID()
        let linked = newAnonymousID()
        try s.sendEvents(renamed, [makeEvent("r")])
        try s.sendEvents(absorbed, [makeEvent("a")])
        #expect(try s.identify(["externalId": "kim", "anonymousId": renamed]).mergeShape == "rename")
        #expect(try s.identify(["externalId": "kim", "anonymousId": absorbed]).mergeShape == "absorb")
        #expect(try s.identify(["externalId": "kim", "anonymousId": linked]).mergeShape == "link")
        let before = try #require(try s.subscriber("kim"))
        let timeline = try s.timeline("kim")
        #expect(markers(timeline).count == 3)
        s.tick()
        for anon in [renamed, absorbed, linked, renamed] {
            let retry = try s.identify(["externalId": "kim", "anonymousId": anon])
            #expect(retry.status == 200)
            #expect(retry.mergeShape == "none")
            #expect(retry.data?.object("merge")?["from"] == nil)
            #expect(retry.warnings.isEmpty)
            #expect(retry.subscriber?.string("updatedAt") == before.string("updatedAt"))
        }
        // And identify without anonymousId (every launch).
        #expect(try s.identify(["externalId": "kim"]).mergeShape == "none")
        #expect(try s.timeline("kim").map { $0.string("id") } == timeline.map { $0.string("id") })
        #expect(try s.subscriber("kim")?.string("updatedAt") == before.string("updatedAt"))
    }

    @Test(arguments: StoreKind.available) func identifiedSourceIsNotMerged(_ store: StoreKind) throws {
        let s = try IdentitySession(store)
        let anon = newAnonymousID()
        try s.sendEvents(anon, [makeEvent("x")])
        #expect(try s.identify(["externalId": "alice", "anonymousId": anon]).mergeShape == "rename")
        let aliceTimeline = try s.timeline("alice")

        // A device restored from alice's backup signs in as bob: no merge, bob still identified.
        let r = try s.identify(["externalId": "bob", "anonymousId": anon, "attributes": ["plan": "basic"]])
        #expect(r.status == 200)
        #expect(r.mergeShape == "none")
        #expect(r.warnings == ["merge_source_identified"])
        #expect(r.subscriber?.string("id") == "bob")
        #expect(r.subscriber?.object("attributes")?.string("plan") == "basic")
        #expect(r.subscriber?.int("eventCount") == 0)
        #expect(try s.subscriber(anon)?.string("id") == "alice")
        #expect(try s.timeline("alice").count == aliceTimeline.count)

        // From the backend the refusal is an error, and changes nothing.
        let merge = try s.backend("POST", "/v1/subscribers/bob/merge", ["anonymousId": anon])
        #expect(merge.status == 409)
        #expect(merge.errorCode == "merge_source_identified")
        #expect(try s.subscriber(anon)?.string("id") == "alice")
        #expect(try s.timeline("bob").isEmpty)
        #expect(try s.timeline("alice").count == aliceTimeline.count)
    }

    @Test(arguments: StoreKind.available) func backendMerge(_ store: StoreKind) throws {
        let s = try IdentitySession(store)
        try s.backend("PUT", "/v1/subscribers/carol", ["attributes": ["plan": "pro"]])
        let anon = newAnonymousID()
        try s.sendEvents(anon, [makeEvent("c1"), makeEvent("c2")])
        let absorb = try s.backend("POST", "/v1/subscribers/carol/merge", ["anonymousId": anon])
        #expect(absorb.status == 200)
        #expect(absorb.mergeShape == "absorb")
        #expect(absorb.subscriber?.int("eventCount") == 3)
        let retry = try s.backend("POST", "/v1/subscribers/carol/merge", ["anonymousId": anon])
        #expect(retry.status == 200)
        #expect(retry.mergeShape == "none")
        let unseen = newAnonymousID()
        let link = try s.backend("POST", "/v1/subscribers/carol/merge", ["anonymousId": unseen])
        #expect(link.mergeShape == "link")
        #expect(try s.subscriber(unseen)?.string("id") == "carol")
        #expect(markers(try s.timeline("carol")).count == 2)
        // Into someone who does not exist: nothing to merge into.
        let missing = try s.backend("POST", "/v1/subscribers/nobody/merge", ["anonymousId": newAnonymousID()])
        #expect(missing.status == 404)
        #expect(missing.errorCode == "subscriber_not_found")
        #expect(try s.backend("POST", "/v1/subscribers/carol/merge", [:]).errorCode == "invalid_request")
    }

    @Test(arguments: StoreKind.available) func linkForANeverSeenAnonymousID(_ store: StoreKind) throws {
        let s = try IdentitySession(store)
        let anon = newAnonymousID()
        let r = try s.identify(["externalId": "dan", "anonymousId": anon])
        #expect(r.status == 200)
        #expect(r.mergeShape == "link")
        #expect(r.data?.object("merge")?.string("from") == anon)
        #expect(r.subscriber?.strings("aliases") == [anon])
        let marker = try #require(try s.timeline("dan").first)
        #expect(marker.object("properties")?.string("shape") == "link")
        #expect(marker.object("properties")?.int("eventsMoved") == 0)
        #expect(marker.object("properties")?.string("from") == anon)

        // The device was offline; what it sends now lands on dan.
        #expect(try s.sendEvents(anon, [makeEvent("late-1"), makeEvent("late-2")]).accepted == 2)
        try s.app("PATCH", "/v1/subscribers/\(anon)/attributes", ["attributes": ["offline": true]])
        #expect(try s.timeline("dan").dropFirst().map { $0.string("id") } == ["late-1", "late-2"])
        #expect(try s.subscriber("dan")?.object("attributes")?.bool("offline") == true)
        #expect(try s.listAll().map { $0.string("id") } == ["dan"])
    }

    @Test(arguments: StoreKind.available) func aliasesChainAcrossManyMerges(_ store: StoreKind) throws {
        let s = try IdentitySession(store)
        let ids = (0..<5).map { _ in newAnonymousID() }
        for (i, anon) in ids.enumerated() where i != 2 { try s.sendEvents(anon, [makeEvent("from-\(i)")]) }
        #expect(try s.identify(["externalId": "eve", "anonymousId": ids[0]]).mergeShape == "rename")
        #expect(try s.identify(["externalId": "eve", "anonymousId": ids[1]]).mergeShape == "absorb")
        #expect(try s.identify(["externalId": "eve", "anonymousId": ids[2]]).mergeShape == "link")
        #expect(try s.identify(["externalId": "eve", "anonymousId": ids[3]]).mergeShape == "absorb")
        #expect(try s.backend("POST", "/v1/subscribers/eve/merge", ["anonymousId": ids[4]]).mergeShape == "absorb")
        let eve = try #require(try s.subscriber("eve"))
        #expect(Set(eve.strings("aliases")) == Set(ids))
        for anon in ids {
            let r = try s.backend("GET", "/v1/subscribers/\(anon)")
            #expect(r.subscriber?.string("id") == "eve")
            #expect(r.metadata?["resolvedFrom"] as? String == anon)
        }
        // Writes through the oldest alias still reach eve.
        try s.sendEvents(ids[0], [makeEvent("after-all")])
        let timeline = try s.timeline("eve")
        #expect(timeline.last?.string("id") == "after-all")
        let shapes = markers(timeline).compactMap { $0.object("properties")?.string("shape") }
        #expect(shapes == ["rename", "absorb", "link", "absorb", "absorb"], "one marker per merge")
        #expect(markers(timeline).compactMap { $0.object("properties")?.string("from") } == ids)
        #expect(timeline.map { $0.int("seq")! } == Array(1...timeline.count))
        #expect(try s.listAll().count == 1)
    }

    @Test(arguments: StoreKind.available) func emailIsSavedAndSubscribedOnlyWithAProvider(_ store: StoreKind) throws {
        let s = try IdentitySession(store)
        let plain = try #require(try s.identify(["externalId": "u1", "email": "u1@example.com"]).subscriber)
        #expect(plain.string("email") == "u1@example.com")
        #expect(plain.object("attributes")?.string("email") == "u1@example.com")
        #expect(plain.object("channels")?.object("email")?.bool("subscribed") == false)
        let viaAttributes = try #require(
            try s.identify(["externalId": "u2", "attributes": ["email": "u2@example.com"]]).subscriber)
        #expect(viaAttributes.string("email") == "u2@example.com")
        #expect(viaAttributes.object("attributes")?.string("email") == "u2@example.com")
        #expect(viaAttributes.object("channels")?.object("email")?.bool("subscribed") == false)
        #expect(try s.identify(["externalId": "u3", "email": "nope"]).errorCode == "invalid_email")
        #expect(try s.subscriber("u3") == nil)

        // The tenant connects a provider: the next identify subscribes the address.
        try s.settings(["emailProviderConnected": true])
        let subscribed = try #require(try s.identify(["externalId": "u1", "email": "u1@example.com"]).subscriber)
        #expect(subscribed.object("channels")?.object("email")?.string("address") == "u1@example.com")
        #expect(subscribed.object("channels")?.object("email")?.bool("subscribed") == true)
        let fromAttributes = try #require(
            try s.identify(["externalId": "u4", "attributes": ["email": "u4@example.com"]]).subscriber)
        #expect(fromAttributes.object("channels")?.object("email")?.bool("subscribed") == true)
        let optOut = try #require(
            try s.identify(["externalId": "u5", "email": "u5@example.com", "subscribe": ["email": false]]).subscriber)
        #expect(optOut.string("email") == "u5@example.com")
        #expect(optOut.object("attributes")?.string("email") == "u5@example.com")
        #expect(optOut.object("channels")?.object("email")?.bool("subscribed") == false)
        let explicit = try #require(
            try s.identify(["externalId": "u6", "email": "u6@example.com", "subscribe": ["email": true]]).subscriber)
        #expect(explicit.object("channels")?.object("email")?.bool("subscribed") == true)
    }

    @Test(arguments: StoreKind.available) func identifyCarriesTheDeviceContext(_ store: StoreKind) throws {
        let s = try IdentitySession(store)
        let anon = newAnonymousID()
        let device: JSONDict = [
            "deviceId": "iphone-1", "platform": "ios", "appVersion": "2.1.0", "osVersion": "18.1",
            "model": "iPhone16,1",
            "locale": "de_DE", "timeZone": "Europe/Berlin",
        ]
        let r = try s.identify(["externalId": "frank", "anonymousId": anon, "device": device])
        #expect(r.mergeShape == "link")
        let stored = try #require(r.subscriber?.objects("devices").first)
        for (key, value) in device { #expect(stored.string(key) == value as? String, "\(key)") }
        #expect(stored.string("lastSeenAt") != nil)
    }

    @Test(arguments: StoreKind.available) func aClientCannotSuppressTheMergeMarker(_ store: StoreKind) throws {
        let s = try IdentitySession(store)
        let anon = newAnonymousID()
        // The marker's id is the server's; a client event may not take it ahead of the merge.
        let squat = try s.app(
            "POST", "/v1/events",
            [
                "subscriberId": "sam", "events": [makeEvent("$subscriber.merged:\(anon)", "innocent")],
            ])
        #expect(squat.status == 400)
        #expect(squat.errorCode == "invalid_event")
        try s.sendEvents("sam", [makeEvent("ok")])
        #expect(try s.identify(["externalId": "sam", "anonymousId": anon]).mergeShape == "link")
        let markers = markers(try s.timeline("sam"))
        #expect(markers.count == 1)
        #expect(markers.first?.object("properties")?.string("from") == anon)
    }
}

import Foundation
import Glibc
import TestSupport
import Testing

/// API.md §5: push subscriptions (login moves them, logout removes them, 20 at most) and preferences.
@Suite struct IdentityPushTests {
    private func register(
        _ s: IdentitySession, _ id: String, _ device: String, token: String, permission: String? = nil
    ) throws -> HTTPClient.Response {
        var body: JSONDict = ["token": token, "platform": "ios"]
        if let permission { body["permission"] = permission }
        return try s.app("PUT", "/v1/subscribers/\(pathID(id))/push-subscriptions/\(pathID(device))", body)
    }

    private func devices(_ s: IdentitySession, _ id: String) throws -> [String] {
        try #require(try s.subscriber(id)).objects("pushSubscriptions").compactMap { $0.string("deviceId") }
    }

    @Test(arguments: StoreKind.available) func registerSetsPermissionAndValidates(_ store: StoreKind) throws {
        let s = try IdentitySession(store)
        let anon = newAnonymousID()
        let r = try register(s, anon, "phone", token: "tok-1", permission: "provisional")
        #expect(r.status == 200)
        let subscription = try #require(r.subscriber?.objects("pushSubscriptions").first)
        #expect(subscription.string("deviceId") == "phone")
        #expect(subscription.string("token") == "tok-1")
        #expect(subscription.string("platform") == "ios")
        #expect(subscription.string("createdAt") != nil && subscription.string("updatedAt") != nil)
        #expect(r.subscriber?.object("attributes")?.string("$notificationPermission") == "provisional")
        #expect(r.subscriber?.objects("devices").first?.string("deviceId") == "phone")
        // A new permission replaces the old; no permission leaves it.
        #expect(try register(s, anon, "phone", token: "tok-1", permission: "authorized").status == 200)
        #expect(try register(s, anon, "phone", token: "tok-2").status == 200)
        let stored = try #require(try s.subscriber(anon))
        #expect(stored.object("attributes")?.string("$notificationPermission") == "authorized")
        #expect(stored.objects("pushSubscriptions").map { $0.string("token") } == ["tok-2"])

        for body in [
            ["token": "t", "platform": "blackberry"], ["platform": "ios"], ["token": "", "platform": "ios"],
            ["token": "t", "platform": "ios", "permission": "maybe"], ["token": "t", "platform": "ios", "extra": 1],
        ] as [JSONDict] {
            let bad = try s.app("PUT", "/v1/subscribers/\(anon)/push-subscriptions/other", body)
            #expect(bad.status == 400, "\(body)")
            #expect(bad.errorCode == "invalid_request", "\(body)")
        }
        #expect(try devices(s, anon) == ["phone"])
    }

    @Test(arguments: StoreKind.available) func aDeviceOrATokenMovesToTheLastLogin(_ store: StoreKind) throws {
        let s = try IdentitySession(store)
        #expect(try register(s, "uma", "shared-ipad", token: "tok-ipad").status == 200)
        #expect(try register(s, "uma", "uma-phone", token: "tok-uma").status == 200)
        // Victor logs in on the same iPad: the device leaves uma.
        #expect(try register(s, "victor", "shared-ipad", token: "tok-ipad").status == 200)
        #expect(try devices(s, "uma") == ["uma-phone"])
        #expect(try devices(s, "victor") == ["shared-ipad"])
        // A reinstall: the token comes back under a new device id, and leaves its old owner.
        #expect(try register(s, "wendy", "reinstalled", token: "tok-uma").status == 200)
        #expect(try devices(s, "uma").isEmpty)
        #expect(try devices(s, "wendy") == ["reinstalled"])
        // Through identify's merge as well: an anonymous device absorbed into victor brings its token,
        // and registering that token again elsewhere still moves it.
        let anon = newAnonymousID()
        #expect(try register(s, anon, "kiosk", token: "tok-kiosk").status == 200)
        #expect(try s.identify(["externalId": "victor", "anonymousId": anon]).mergeShape == "absorb")
        #expect(Set(try devices(s, "victor")) == ["shared-ipad", "kiosk"])
        #expect(try register(s, "xena", "kiosk", token: "tok-kiosk").status == 200)
        #expect(try devices(s, "victor") == ["shared-ipad"])
    }

    @Test(arguments: StoreKind.available) func logoutDeletesAndDeletingNothingIsFine(_ store: StoreKind) throws {
        let s = try IdentitySession(store)
        #expect(try register(s, "yara", "phone", token: "tok-phone", permission: "authorized").status == 200)
        #expect(try register(s, "zed", "tablet", token: "tok-tablet").status == 200)

        let logout = try s.app("DELETE", "/v1/subscribers/yara/push-subscriptions/phone")
        #expect(logout.status == 200)
        #expect(logout.data?.bool("deleted") == true)
        #expect(try devices(s, "yara").isEmpty)
        let again = try s.app("DELETE", "/v1/subscribers/yara/push-subscriptions/phone")
        #expect(again.status == 200)
        #expect(again.data?.bool("deleted") == false)
        // Someone else's device is not touched by a logout naming the wrong person.
        let wrong = try s.app("DELETE", "/v1/subscribers/yara/push-subscriptions/tablet")
        #expect(wrong.status == 200)
        #expect(wrong.data?.bool("deleted") == false)
        #expect(try devices(s, "zed") == ["tablet"])
        // A subscriber nobody has seen: fine, and not created by it.
        let unseen = newAnonymousID()
        let nothing = try s.app("DELETE", "/v1/subscribers/\(unseen)/push-subscriptions/phone")
        #expect(nothing.status == 200)
        #expect(nothing.data?.bool("deleted") == false)
        #expect(try s.subscriber(unseen) == nil)
        #expect(try s.app("DELETE", "/v1/subscribers/nobody/push-subscriptions/phone").status == 200)
        #expect(try s.subscriber("nobody") == nil)

        // After logout the SDK re-registers the phone under a fresh anonymous id.
        let fresh = newAnonymousID()
        #expect(try register(s, fresh, "phone", token: "tok-phone").status == 200)
        #expect(try devices(s, fresh) == ["phone"])
        #expect(try devices(s, "yara").isEmpty)
    }

    @Test(arguments: StoreKind.available) func theTwentyFirstEvictsTheLeastRecentlySeen(_ store: StoreKind) throws {
        let s = try IdentitySession(store)
        for i in 0..<20 {
            #expect(try register(s, "amy", "d\(i < 10 ? "0" : "")\(i)", token: "tok-\(i)").status == 200)
            usleep(2_000)
        }
        #expect(try devices(s, "amy").count == 20)
        // d00 is seen again, so d01 is now the least recently seen.
        #expect(try register(s, "amy", "d00", token: "tok-0").status == 200)
        usleep(2_000)
        let r = try register(s, "amy", "d20", token: "tok-20")
        #expect(r.status == 200)
        let now = Set(try devices(s, "amy"))
        #expect(now.count == 20)
        #expect(now.contains("d20"))
        #expect(now.contains("d00"))
        #expect(!now.contains("d01"))
        // The evicted device can register again (evicting the next oldest).
        #expect(try register(s, "amy", "d01", token: "tok-1").status == 200)
        #expect(!(try devices(s, "amy")).contains("d02"))
    }

    @Test(arguments: StoreKind.available) func theDeviceJustRegisteredIsNeverTheOneEvicted(_ store: StoreKind) throws {
        // Twenty-one registrations pipelined on one connection land within a few milliseconds,
        // so several share a timestamp; the one registered last must still be kept.
        let s = try IdentitySession(store)
        var requests = ""
        for i in 0..<21 {
            let body = "{\"token\":\"burst-\(i)\",\"platform\":\"android\"}"
            requests += "PUT /v1/subscribers/burst/push-subscriptions/z\(String(format: "%02d", i)) HTTP/1.1\r\n"
            requests += "Host: localhost\r\nAuthorization: Bearer \(s.tenant.clientKey)\r\n"
            requests += "Content-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)"
        }
        let client = try HTTPClient(port: s.server.port)
        try client.write(requests)
        for _ in 0..<21 { #expect(try client.readResponse(method: "PUT").status == 200) }
        let kept = Set(try devices(s, "burst"))
        #expect(kept.count == 20)
        #expect(kept.contains("z20"), "the last registration (z20) survives")
    }

    @Test(arguments: StoreKind.available) func preferencesAreStampedPerTopic(_ store: StoreKind) throws {
        let s = try IdentitySession(store)
        let anon = newAnonymousID()
        let first = try s.app("PUT", "/v1/subscribers/\(anon)/preferences", ["topics": ["news": false, "promo": true]])
        #expect(first.status == 200)
        let p1 = try #require(first.subscriber?.object("preferences"))
        #expect(p1.object("news")?.bool("subscribed") == false)
        #expect(p1.object("promo")?.bool("subscribed") == true)
        let promoStamp = try #require(p1.object("promo")?.string("updatedAt"))
        let newsStamp = try #require(p1.object("news")?.string("updatedAt"))
        usleep(5_000)
        let second = try s.app("PUT", "/v1/subscribers/\(anon)/preferences", ["topics": ["news": true, "promo": true]])
        let p2 = try #require(second.subscriber?.object("preferences"))
        #expect(p2.object("news")?.bool("subscribed") == true)
        #expect(p2.object("news")?.string("updatedAt") != newsStamp, "a changed choice gets a new stamp")
        #expect(p2.object("promo")?.string("updatedAt") == promoStamp, "an unchanged one keeps its stamp")
        #expect(p2.object("news")!.string("updatedAt")! > newsStamp)
        // The same choices again change nothing, stamps and updatedAt included.
        usleep(5_000)
        let same = try s.app("PUT", "/v1/subscribers/\(anon)/preferences", ["topics": ["news": true, "promo": true]])
        #expect(same.status == 200)
        #expect(NSDictionary(dictionary: same.subscriber?.object("preferences") ?? [:]) == NSDictionary(dictionary: p2))
        #expect(same.subscriber?.string("updatedAt") == second.subscriber?.string("updatedAt"))
        for bad in [["topics": ["news": "yes"]], ["topics": ["": true]], [:], ["topics": [1]]] as [JSONDict] {
            #expect(
                try s.app("PUT", "/v1/subscribers/\(anon)/preferences", bad).errorCode == "invalid_request", "\(bad)")
        }
    }
}

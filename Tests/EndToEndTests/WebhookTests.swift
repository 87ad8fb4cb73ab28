import Foundation
import Glibc
import TestSupport
import Testing

/// API.md §14 over HTTP against the real binary and a loopback receiver: every event type,
/// signatures checked by Python's `hmac`, retries, `410`, the filter, and nothing for a change
/// that did not happen. Each test runs on SQLite, and on PostgreSQL when a test server is set.
@Suite struct WebhookTests {
    let receiver = WebhookReceiver.shared

    private func session(_ store: StoreKind) throws -> IdentitySession {
        try IdentitySession(WebhookServers.shared(store))
    }

    @Test(arguments: StoreKind.available) func everyEventTypeArrivesSignedWithItsData(_ store: StoreKind) throws {
        let s = try session(store)
        let tag = randomAlphanumerics(12)
        let hook = try s.createWebhook(url: receiver.url("ok", tag: tag))

        #expect(try s.backend("PUT", "/v1/subscribers/ada", ["attributes": ["plan": "pro"]]).status == 201)
        let anon = newAnonymousID()
        #expect(
            try s.app("POST", "/v1/events", ["subscriberId": anon, "events": [["id": "e1", "name": "open"]]]).status
                == 200)
        #expect(try s.identify(["externalId": "bob", "anonymousId": anon]).status == 200)
        #expect(try s.identify(["externalId": "ada", "identityHash": try s.identityHash("ada")]).status == 200)
        let device = "/push-subscriptions/ipad"
        let ada = ["BuzzKit-Identity-Hash": try s.identityHash("ada")]  // ada is verified from now on
        #expect(
            try s.app("PUT", "/v1/subscribers/ada" + device, ["token": "tok", "platform": "ios"], headers: ada).status
                == 200)
        #expect(try s.app("PUT", "/v1/subscribers/bob" + device, ["token": "tok", "platform": "ios"]).status == 200)
        #expect(try s.backend("POST", "/v1/tenant/identity-secret/rotate").status == 200)
        #expect(try s.backend("DELETE", "/v1/subscribers/bob").status == 200)
        let test = try s.backend("POST", "/v1/webhooks/\(hook.id)/test")
        #expect(test.status == 200)

        let types = [
            "subscriber.created", "subscriber.created", "subscriber.merged", "subscriber.verified",
            "push_subscription.moved", "identity_secret.rotated", "subscriber.deleted", "webhook.test",
        ]
        let events = receiver.waitFor(tag: tag) { $0.count >= types.count }
        // One worker sends in outbox order, which is the order of the changes.
        #expect(events.map { $0.string("type") ?? "" } == types)
        func data(_ type: String) -> [JSONDict] {
            events.filter { $0.string("type") == type }.compactMap { $0.object("data") }
        }
        let created = data("subscriber.created")
        #expect(created.count == 2)
        #expect(created.contains { $0.string("subscriberId") == "ada" && $0["anonymous"] as? Bool == false })
        #expect(created.contains { $0.string("subscriberId") == anon && $0["anonymous"] as? Bool == true })
        let merged = try #require(data("subscriber.merged").first)
        #expect(merged.string("subscriberId") == "bob" && merged.string("from") == anon)
        #expect(merged.string("shape") == "rename" && merged.int("eventsMoved") == 0)
        #expect(data("subscriber.verified").first?.string("subscriberId") == "ada")
        let moved = try #require(data("push_subscription.moved").first)
        #expect(moved.string("deviceId") == "ipad" && moved.string("from") == "ada" && moved.string("to") == "bob")
        #expect(data("identity_secret.rotated").first?.string("previousExpiresAt") != nil)
        let deleted = try #require(data("subscriber.deleted").first)
        #expect(deleted.string("subscriberId") == "bob" && deleted.strings("aliases") == [anon])
        #expect(data("webhook.test").first?.string("webhookId") == hook.id)
        #expect(events.first { $0.string("type") == "webhook.test" }?.string("id") == test.data?.string("eventId"))

        // Every request: the Standard Webhooks headers, webhook-id the event id, the tenant named.
        for request in receiver.requests(tag: tag) {
            let headers = request["headers"] as? JSONDict ?? [:]
            let body = try #require(
                (request["body"] as? String).flatMap {
                    try JSONSerialization.jsonObject(with: Data($0.utf8)) as? JSONDict
                })
            #expect(headers.string("webhook-id") == body.string("id"))
            #expect(body.string("id")?.hasPrefix("evt_") == true)
            #expect(body.string("tenantId") == s.tenant.id)
            #expect(headers.string("webhook-signature")?.hasPrefix("v1,") == true)
        }
        let checked = try receiver.verifySignatures(secret: hook.secret, tag: tag)
        #expect(checked.valid == receiver.requests(tag: tag).count && checked.invalid == 0)
        // A wrong secret must fail the same check, or the check proves nothing.
        let wrong = try receiver.verifySignatures(
            secret: "whsec_" + Data(repeating: 7, count: 32).base64EncodedString(), tag: tag)
        #expect(wrong.valid == 0 && wrong.invalid == checked.valid)
    }

    @Test(arguments: StoreKind.available) func aFailingReceiverIsRetriedAndEveryAttemptIsListed(_ store: StoreKind)
        throws
    {
        let s = try session(store)
        let tag = randomAlphanumerics(12)
        let hook = try s.createWebhook(url: receiver.url("fail/2", tag: tag), events: ["subscriber.created"])
        #expect(try s.backend("PUT", "/v1/subscribers/retry-me", [:] as JSONDict).status == 201)
        let requests = receiver.waitFor(tag: tag, seconds: 15) { $0.count >= 3 }
        #expect(requests.count == 3)
        #expect(Set(requests.compactMap { $0.string("id") }).count == 1, "every attempt carries the same event id")
        var deliveries: [JSONDict] = []
        _ = eventually(5) {
            deliveries = (try? s.backend("GET", "/v1/webhooks/\(hook.id)/deliveries").data?.objects("deliveries")) ?? []
            return deliveries.first?.string("status") == "succeeded"
        }
        #expect(deliveries.map { $0.int("attempt") ?? 0 } == [3, 2, 1])
        #expect(deliveries.map { $0.string("status") ?? "" } == ["succeeded", "failed", "failed"])
        #expect(deliveries.map { $0.int("responseStatus") ?? 0 } == [200, 500, 500])
        #expect(deliveries[1].string("nextAttemptAt") != nil && deliveries[0]["nextAttemptAt"] is NSNull)
        #expect(
            deliveries.allSatisfy {
                $0.string("type") == "subscriber.created" && $0.string("id")?.hasPrefix("dlv_") == true
            })
        // Pages: one at a time, newest first, then the cursor runs out.
        let first = try s.backend("GET", "/v1/webhooks/\(hook.id)/deliveries?limit=2")
        #expect(first.data?.objects("deliveries").count == 2)
        let cursor = try #require(first.data?.string("nextCursor"))
        let second = try s.backend("GET", "/v1/webhooks/\(hook.id)/deliveries?limit=2&cursor=\(cursor)")
        #expect(second.data?.objects("deliveries").map { $0.int("attempt") ?? 0 } == [1])
        #expect(second.data?["nextCursor"] is NSNull)
    }

    @Test(arguments: StoreKind.available) func a410DisablesTheEndpoint(_ store: StoreKind) throws {
        let s = try session(store)
        let tag = randomAlphanumerics(12)
        let hook = try s.createWebhook(url: receiver.url("status/410", tag: tag))
        #expect(try s.backend("PUT", "/v1/subscribers/gone-1", [:] as JSONDict).status == 201)
        #expect(receiver.waitFor(tag: tag) { $0.count >= 1 }.count == 1)
        #expect(
            eventually(5) {
                (try? s.backend("GET", "/v1/webhooks/\(hook.id)").data?.object("webhook")?["enabled"] as? Bool) == false
            })
        #expect(try s.backend("PUT", "/v1/subscribers/gone-2", [:] as JSONDict).status == 201)
        #expect(try s.backend("POST", "/v1/webhooks/\(hook.id)/test").status == 200)
        usleep(1_500_000)  // longer than a poll and a retry: nothing more may arrive
        #expect(receiver.requests(tag: tag).count == 1)
        let deliveries = try s.backend("GET", "/v1/webhooks/\(hook.id)/deliveries").data?.objects("deliveries") ?? []
        #expect(deliveries.map { $0.int("responseStatus") ?? 0 } == [410])
    }

    @Test(arguments: StoreKind.available) func theFilterSendsOnlyTheChosenTypes(_ store: StoreKind) throws {
        let s = try session(store)
        let tag = randomAlphanumerics(12)
        let hook = try s.createWebhook(url: receiver.url("ok", tag: tag), events: ["subscriber.deleted"])
        #expect(
            try s.backend("GET", "/v1/webhooks/\(hook.id)").data?.object("webhook")?.strings("events") == [
                "subscriber.deleted"
            ])
        #expect(try s.backend("PUT", "/v1/subscribers/filtered", [:] as JSONDict).status == 201)
        #expect(try s.backend("DELETE", "/v1/subscribers/filtered").status == 200)
        let events = receiver.waitFor(tag: tag) { $0.count >= 1 }
        usleep(500_000)
        #expect(receiver.events(tag: tag).map { $0.string("type") } == ["subscriber.deleted"])
        #expect(events.first?.object("data")?.string("subscriberId") == "filtered")
    }

    @Test(arguments: StoreKind.available) func nothingIsSentForARefusedOrRolledBackChange(_ store: StoreKind) throws {
        let s = try session(store)
        let tag = randomAlphanumerics(12)
        _ = try s.createWebhook(url: receiver.url("ok", tag: tag))
        // Refused before any write: an invalid external id, an over-limit attribute map.
        #expect(try s.backend("PUT", "/v1/subscribers/null", [:] as JSONDict).status == 400)
        // Refused inside the write, after the merge recorded its events: the email attribute is
        // not an address, so the whole identify (link, create, events) rolls back.
        let anon = newAnonymousID()
        let refused = try s.identify(["externalId": "rolled-back", "anonymousId": anon, "attributes": ["email": 5]])
        #expect(refused.status == 400)
        #expect(try s.subscriber("rolled-back") == nil)
        // A backend merge refused with 409 sends no merged event either.
        #expect(try s.backend("PUT", "/v1/subscribers/keeper", [:] as JSONDict).status == 201)
        #expect(try s.backend("PUT", "/v1/subscribers/other", [:] as JSONDict).status == 201)
        #expect(try s.backend("POST", "/v1/subscribers/keeper/merge", ["anonymousId": "other"]).status != 200)
        // A marker change afterwards: once it arrives, everything before it was delivered too.
        #expect(try s.backend("PUT", "/v1/subscribers/marker", [:] as JSONDict).status == 201)
        let events = receiver.waitFor(tag: tag) {
            $0.contains { $0.object("data")?.string("subscriberId") == "marker" }
        }
        #expect(
            events.compactMap { $0.object("data")?.string("subscriberId") }.sorted() == ["keeper", "marker", "other"])
        #expect(!events.contains { $0.string("type") == "subscriber.merged" })
    }

    @Test(arguments: StoreKind.available) func endpointsAreTenantIsolatedAndBackendOnly(_ store: StoreKind) throws {
        let a = try session(store)
        let b = try session(store)
        let hook = try a.createWebhook(url: receiver.url("ok", tag: randomAlphanumerics(12)))
        for (method, path) in [
            ("GET", "/v1/webhooks/\(hook.id)"), ("DELETE", "/v1/webhooks/\(hook.id)"),
            ("GET", "/v1/webhooks/\(hook.id)/deliveries"), ("POST", "/v1/webhooks/\(hook.id)/test"),
        ] {
            let r = try b.backend(method, path)
            #expect(r.status == 404 && r.errorCode == "not_found", "\(method) \(path)")
        }
        #expect(try b.backend("GET", "/v1/webhooks").data?.objects("webhooks").isEmpty == true)
        #expect(try a.backend("GET", "/v1/webhooks").data?.objects("webhooks").map { $0.string("id") } == [hook.id])
        let fromApp = try a.app("GET", "/v1/webhooks")
        #expect(fromApp.status == 403 && fromApp.errorCode == "forbidden")
        let listed = try #require(try a.backend("GET", "/v1/webhooks/\(hook.id)").data?.object("webhook"))
        #expect(listed.strings("events") == ["*"] && listed["enabled"] as? Bool == true && listed["secret"] == nil)
        #expect(try a.backend("DELETE", "/v1/webhooks/\(hook.id)").data?["deleted"] as? Bool == true)
        #expect(try a.backend("GET", "/v1/webhooks/\(hook.id)").status == 404)
    }

    @Test(arguments: StoreKind.available) func createValidatesTheRequest(_ store: StoreKind) throws {
        let s = try session(store)
        for body in [
            ["url": "ftp://example.com/x"], ["url": "http:///nohost"], ["url": "not a url"], [:],
            ["url": "http://127.0.0.1:9/x", "events": ["subscriber.exploded"]],
            ["url": "http://127.0.0.1:9/x", "events": [] as [String]], ["url": "http://127.0.0.1:9/x", "extra": 1],
        ] as [JSONDict] {
            let r = try s.backend("POST", "/v1/webhooks", body)
            #expect(r.status == 400 && r.errorCode == "invalid_request", "\(body)")
        }
        let created = try s.backend("POST", "/v1/webhooks", ["url": "http://127.0.0.1:9/x", "description": "crm"])
        #expect(created.status == 201)
        let secret = try #require(created.data?.string("secret"))
        #expect(secret.hasPrefix("whsec_") && Data(base64Encoded: String(secret.dropFirst(6)))?.count == 32)
        #expect(created.data?.object("webhook")?.string("description") == "crm")
    }

    /// Without `webhookAllowPrivateNetworks` the server refuses URLs into its own networks.
    @Test(arguments: StoreKind.available) func privateDestinationsAreRefusedByDefault(_ store: StoreKind) throws {
        let s = try IdentitySession(store)  // the shared identity server: private networks not allowed
        for url in [
            "http://127.0.0.1:8080/x", "http://localhost/x", "http://10.1.2.3/x", "http://192.168.0.1/",
            "http://172.16.5.4/", "http://169.254.169.254/latest/meta-data", "http://[::1]:80/x", "http://[fe80::1]/",
            "http://[fd00::1]/", "http://0.0.0.0/", "http://[::ffff:127.0.0.1]/",
        ] {
            let r = try s.backend("POST", "/v1/webhooks", ["url": url])
            #expect(r.status == 400 && r.errorCode == "invalid_request", "\(url)")
        }
        // A public literal address needs no DNS and is accepted.
        #expect(try s.backend("POST", "/v1/webhooks", ["url": "https://93.184.216.34/hooks"]).status == 201)
    }

    @Test(arguments: StoreKind.available) func metricsCountDeliveriesAndShowTheBacklog(_ store: StoreKind) throws {
        let s = try session(store)
        let tag = randomAlphanumerics(12)
        let hook = try s.createWebhook(url: receiver.url("ok", tag: tag))
        #expect(try s.backend("POST", "/v1/webhooks/\(hook.id)/test").status == 200)
        receiver.waitFor(tag: tag) { $0.count >= 1 }
        let client = try HTTPClient(port: WebhookServers.shared(store).port)
        var text = ""
        _ = eventually(5) {
            text = (try? client.send("GET", "/metrics").text) ?? ""
            return text.contains("buzzkit_webhook_deliveries_total{result=\"succeeded\"}")
        }
        #expect(text.contains("buzzkit_webhook_deliveries_total{result=\"succeeded\"}"))
        #expect(text.contains("buzzkit_webhook_outbox_pending "))
    }
}

import Foundation
import Glibc
import TestSupport
import Testing

/// API.md §13 over HTTP: replays byte for byte with no second effect, 422 for another request,
/// scoping per API key and tenant, and what is not kept; on SQLite, and on PostgreSQL when a test
/// server is set.
@Suite struct IdempotencyTests {
    let receiver = WebhookReceiver.shared

    private func send(
        _ s: IdentitySession, _ method: String, _ path: String, body: String = "", key: String?,
        headers: [String: String]? = nil
    ) throws -> HTTPClient.Response {
        var fields = headers ?? s.tenant.backend
        fields["Content-Type"] = "application/json"
        if let key { fields["Idempotency-Key"] = key }
        return try s.client.send(method, path, body: Array(body.utf8), headers: fields)
    }

    @Test(arguments: StoreKind.available) func aRetriedUpsertGetsTheFirst201BackByteForByteWithoutASecondEffect(
        _ store: StoreKind
    ) throws {
        let s = try IdentitySession(WebhookServers.shared(store))
        let tag = randomAlphanumerics(12)
        _ = try s.createWebhook(url: receiver.url("ok", tag: tag), events: ["subscriber.created"])
        let key = "upsert-" + randomAlphanumerics(10)
        let body = #"{"attributes":{"plan":"trial"}}"#
        let first = try send(s, "PUT", "/v1/subscribers/idem-ada", body: body, key: key)
        #expect(first.status == 201)
        #expect(first.header("Idempotent-Replayed") == nil)
        // Someone else changes the subscriber in between: a replay must not undo it.
        #expect(try s.backend("PUT", "/v1/subscribers/idem-ada", ["attributes": ["plan": "pro"]]).status == 200)
        let retry = try send(s, "PUT", "/v1/subscribers/idem-ada", body: body, key: key)
        #expect(retry.status == 201)
        #expect(retry.body == first.body, "the stored answer, byte for byte (its request id included)")
        #expect(retry.header("Idempotent-Replayed") == "true")
        #expect(try s.subscriber("idem-ada")?.object("attributes")?.string("plan") == "pro")
        // One subscriber.created, not two.
        receiver.waitFor(tag: tag) { $0.count >= 1 }
        usleep(500_000)
        #expect(receiver.events(tag: tag).count == 1)
        // The same body without the key is a new request (200: it exists now).
        #expect(try send(s, "PUT", "/v1/subscribers/idem-ada", body: body, key: nil).status == 200)
    }

    @Test(arguments: StoreKind.available) func aRetriedIdentifyMergesOnceAndARetriedBatchStoresItsEventsOnce(
        _ store: StoreKind
    ) throws {
        let s = try IdentitySession(store)
        let anon = newAnonymousID()
        let key = "identify-" + randomAlphanumerics(10)
        let identify = #"{"externalId":"idem-bob","anonymousId":"\#(anon)"}"#
        let first = try send(s, "POST", "/v1/identify", body: identify, key: key, headers: s.tenant.app)
        #expect(first.status == 200)
        let retry = try send(s, "POST", "/v1/identify", body: identify, key: key, headers: s.tenant.app)
        #expect(retry.body == first.body && retry.header("Idempotent-Replayed") == "true")
        #expect(try s.timeline("idem-bob").filter { $0.string("name") == "$subscriber.merged" }.count == 1)

        let batch = #"{"subscriberId":"idem-bob","events":[{"id":"i1","name":"open"},{"id":"i2","name":"tap"}]}"#
        let batchKey = "batch-" + randomAlphanumerics(10)
        let stored = try send(s, "POST", "/v1/events", body: batch, key: batchKey, headers: s.tenant.app)
        let again = try send(s, "POST", "/v1/events", body: batch, key: batchKey, headers: s.tenant.app)
        #expect(stored.data?.int("accepted") == 2)
        #expect(again.body == stored.body, "the first answer (accepted 2), not a second one (duplicates 2)")
        #expect(try s.timeline("idem-bob").filter { ["open", "tap"].contains($0.string("name")) }.count == 2)
    }

    @Test(arguments: StoreKind.available) func theSameKeyForAnotherRequestIs422(_ store: StoreKind) throws {
        let s = try IdentitySession(store)
        let key = "reuse-" + randomAlphanumerics(10)
        #expect(try send(s, "PUT", "/v1/subscribers/reuse-1", body: "{}", key: key).status == 201)
        for (method, path, body) in [
            ("PUT", "/v1/subscribers/reuse-1", #"{"email":null}"#),  // another body
            ("PUT", "/v1/subscribers/reuse-2", "{}"),  // another path
            ("PUT", "/v1/subscribers/reuse-1?x=1", "{}"),  // another query
            ("DELETE", "/v1/subscribers/reuse-1", ""),  // another method
        ] {
            let r = try send(s, method, path, body: body, key: key)
            #expect(r.status == 422 && r.errorCode == "idempotency_key_reused", "\(method) \(path) \(body)")
            #expect(r.header("Idempotent-Replayed") == nil)
        }
        #expect(try s.subscriber("reuse-1") != nil, "the DELETE did not run")
        #expect(try s.subscriber("reuse-2") == nil)
    }

    @Test(arguments: StoreKind.available) func keysAreScopedToTheAPIKeyAndTheTenant(_ store: StoreKind) throws {
        let s = try IdentitySession(store)
        let issued = try s.backend("POST", "/v1/keys", ["kind": "secret"])
        let otherKey = try #require(issued.data?.string("apiKey"))
        let key = "scope-" + randomAlphanumerics(10)
        #expect(try send(s, "PUT", "/v1/subscribers/scoped", body: "{}", key: key).status == 201)
        // Another key of the same tenant: its own request, not the stored answer.
        let other = try send(
            s, "PUT", "/v1/subscribers/scoped", body: "{}", key: key, headers: ["Authorization": "Bearer \(otherKey)"])
        #expect(other.status == 200 && other.header("Idempotent-Replayed") == nil)
        // A workspace key acting in two tenants: one scope per tenant.
        let t = try IdentitySession(store)
        let ws = s.server.workspaceKey
        let inS = try send(
            s, "PUT", "/v1/subscribers/ws-scoped", body: "{}", key: key,
            headers: ["Authorization": "Bearer \(ws)", "BuzzKit-Tenant": s.tenant.id])
        let inT = try send(
            s, "PUT", "/v1/subscribers/ws-scoped", body: "{}", key: key,
            headers: ["Authorization": "Bearer \(ws)", "BuzzKit-Tenant": t.tenant.id])
        #expect(inS.status == 201 && inT.status == 201 && inT.header("Idempotent-Replayed") == nil)
        #expect(try t.subscriber("ws-scoped") != nil)
    }

    @Test(arguments: StoreKind.available) func refusalsThatMaySucceedLaterAreNotKeptButOther4xxAre(_ store: StoreKind)
        throws
    {
        let s = try IdentitySession(store)
        // 401: the tenant requires verification; once it no longer does, the retry runs.
        #expect(try s.backend("PATCH", "/v1/tenant", ["requireVerification": true]).status == 200)
        let key = "unauth-" + randomAlphanumerics(10)
        let identify = #"{"externalId":"later-ok"}"#
        let refused = try send(s, "POST", "/v1/identify", body: identify, key: key, headers: s.tenant.app)
        #expect(refused.status == 401)
        #expect(try s.backend("PATCH", "/v1/tenant", ["requireVerification": false]).status == 200)
        let retried = try send(s, "POST", "/v1/identify", body: identify, key: key, headers: s.tenant.app)
        #expect(retried.status == 200 && retried.header("Idempotent-Replayed") == nil)

        // 404 is kept: the retry answers 404 even after the subscriber appeared.
        let missing = "delete-" + randomAlphanumerics(10)
        let gone = try send(s, "DELETE", "/v1/subscribers/not-yet", key: missing)
        #expect(gone.status == 404)
        #expect(try s.backend("PUT", "/v1/subscribers/not-yet", [:] as JSONDict).status == 201)
        let replayed = try send(s, "DELETE", "/v1/subscribers/not-yet", key: missing)
        #expect(
            replayed.status == 404 && replayed.body == gone.body && replayed.header("Idempotent-Replayed") == "true")
        #expect(try s.subscriber("not-yet") != nil)

        // A validation error is kept too.
        let invalid = "invalid-" + randomAlphanumerics(10)
        let bad = try send(s, "PUT", "/v1/subscribers/null", body: "{}", key: invalid)
        #expect(bad.status == 400)
        #expect(
            try send(s, "PUT", "/v1/subscribers/null", body: "{}", key: invalid).header("Idempotent-Replayed") == "true"
        )
    }

    @Test(arguments: StoreKind.available) func aMalformedKeyIs400AndGetIgnoresTheHeader(_ store: StoreKind) throws {
        let s = try IdentitySession(store)
        for key in ["has space", String(repeating: "k", count: 256), "tab\tin"] {
            let r = try send(s, "PUT", "/v1/subscribers/malformed", body: "{}", key: key)
            #expect(r.status == 400 && r.errorCode == "invalid_request", "\(key)")
        }
        #expect(try s.subscriber("malformed") == nil, "nothing ran")
        let longest = String(repeating: "k", count: 255)
        #expect(try send(s, "PUT", "/v1/subscribers/malformed", body: "{}", key: longest).status == 201)
        // GET: the header changes nothing, and a malformed one is no error.
        let read = try send(s, "GET", "/v1/subscribers/malformed", key: "has space")
        #expect(read.status == 200 && read.header("Idempotent-Replayed") == nil)
    }
}

import API
import Dispatch
import Foundation
import Identity
import Postgres
import SQLite
import Storage
import Synchronization
import TestSupport
import Testing
import Threads
import WebhookDelivery
import WebhookSigning

/// A transport that answers from a script and remembers what it was asked to send.
private final class ScriptedTransport: DeliveryTransport {
    struct Sent: Sendable {
        var url: String
        var headers: [String: String]
        var body: [UInt8]
    }
    private let answers: Mutex<[Result<Int, TransportError>]>
    let sent = Mutex<[Sent]>([])

    init(_ answers: [Result<Int, TransportError>]) { self.answers = Mutex(answers) }

    func post(url: String, headers: [(String, String)], body: [UInt8], timeout: Duration) throws -> Int {
        sent.withLock {
            $0.append(Sent(url: url, headers: Dictionary(headers, uniquingKeysWith: { a, _ in a }), body: body))
        }
        let next = answers.withLock { $0.isEmpty ? .success(200) : $0.removeFirst() }
        return try next.get()
    }
}

/// A store that counts the write jobs handed to it, and passes everything on.
private final class WriteCountingStore: IdentityStore {
    let base: any IdentityStore
    let writes = Atomic<Int>(0)

    init(_ base: any IdentityStore) { self.base = base }

    func read<T>(_ body: (any IdentityReadContext) throws -> T) throws -> T { try base.read(body) }

    func snapshot(tenantID: String, id: String) throws -> SubscriberSnapshot? {
        try base.snapshot(tenantID: tenantID, id: id)
    }

    func snapshot(
        tenantID: String, id: String, completion: @escaping @Sendable (Result<SubscriberSnapshot?, any Error>) -> Void
    ) {
        base.snapshot(tenantID: tenantID, id: id, completion: completion)
    }

    func write<T: Sendable>(
        _ body: @escaping @Sendable (any IdentityWriteContext) throws -> T,
        completion: @escaping @Sendable (Result<T, any Error>) -> Void
    ) {
        writes.add(1, ordering: .relaxed)
        base.write(body, completion: completion)
    }
}

/// The worker against the real store (SQLite, and PostgreSQL when a test server is set) with a
/// manual clock: the schedule, giving up, 410, the lease.
@Suite struct DeliveryWorkerTests {
    private func setUp(_ store: StoreKind) throws -> (InProcessApp, TestTenant, endpointID: String) {
        var configuration = ApplicationConfiguration()
        configuration.webhookDestinations = DestinationPolicy(allowPrivateNetworks: true)
        let app = try InProcessApp(store: store, configuration: configuration)
        let tenant = try app.createTenant()
        let created = try app.send(
            "POST", "/v1/webhooks", json: ["url": "http://127.0.0.1:9/hook"], headers: tenant.backend)
        let id = try #require(created.data?["webhook"] as? [String: Any])["id"] as? String
        return (app, tenant, try #require(id))
    }

    private func worker(
        _ app: InProcessApp, _ transport: ScriptedTransport, schedule: [Int], batchSize: Int = 32,
        store: (any IdentityStore)? = nil
    ) -> DeliveryWorker {
        var configuration = DeliveryWorker.Configuration()
        configuration.retryScheduleSeconds = schedule
        configuration.batchSize = batchSize
        configuration.jitter = 0.1
        configuration.destinations = DestinationPolicy(allowPrivateNetworks: true)
        let clock = app.clock
        return DeliveryWorker(
            store: store ?? app.store, transport: transport, configuration: configuration, now: { clock.now() })
    }

    private func deliveries(_ app: InProcessApp, _ tenant: TestTenant, _ id: String) throws -> [[String: Any]] {
        let response = try app.send("GET", "/v1/webhooks/\(id)/deliveries", headers: tenant.backend)
        return (response.data?["deliveries"] as? [[String: Any]]) ?? []
    }

    @Test(arguments: StoreKind.available) func failuresFollowTheScheduleWithJitterThenGiveUp(_ store: StoreKind) throws
    {
        let (app, tenant, id) = try setUp(store)
        defer { app.close() }
        let transport = ScriptedTransport([.success(500), .failure(TransportError("connect refused")), .success(503)])
        let worker = worker(app, transport, schedule: [10, 100])
        #expect(try app.send("PUT", "/v1/subscribers/sched", json: [:], headers: tenant.backend).status == 201)

        #expect(worker.runOnce() == 1)
        #expect(worker.runOnce() == 0, "the retry is not due yet")
        app.clock.advance(byMillis: 8_900)  // below 10 s minus 10 % jitter
        #expect(worker.runOnce() == 0)
        app.clock.advance(byMillis: 2_200)  // above 10 s plus 10 %
        #expect(worker.runOnce() == 1)
        app.clock.advance(byMillis: 89_000)
        #expect(worker.runOnce() == 0)
        app.clock.advance(byMillis: 22_000)
        #expect(worker.runOnce() == 1)
        app.clock.advance(byMillis: 10_000_000)
        #expect(worker.runOnce() == 0, "two retries, then given up")

        let attempts = try deliveries(app, tenant, id)
        #expect(attempts.map { $0["attempt"] as? Int } == [3, 2, 1])
        #expect(attempts.map { $0["status"] as? String } == ["failed", "failed", "failed"])
        #expect(attempts.map { $0["responseStatus"] as? Int } == [503, nil, 500])
        #expect((attempts[1]["error"] as? String)?.contains("connect refused") == true)
        #expect(attempts[0]["nextAttemptAt"] is NSNull, "given up: no next attempt")
        #expect(try app.store.read { try $0.pendingWebhookDeliveryCount() } == 0)
        // Every attempt was the same event with the same body; only the timestamp moved.
        let sent = transport.sent.withLock { $0 }
        #expect(Set(sent.map { $0.headers["webhook-id"] ?? "" }).count == 1)
        #expect(Set(sent.map(\.body)).count == 1)
        #expect(Set(sent.map { $0.headers["webhook-timestamp"] ?? "" }).count == 3)
    }

    /// One event, several endpoints: a row for each endpoint whose filter takes it (on SQLite from
    /// the writer's cache of endpoints), each sent the same bytes under the same id.
    @Test(arguments: StoreKind.available) func anEventFansOutToTheEndpointsWhoseFilterTakesIt(_ store: StoreKind)
        throws
    {
        let (app, tenant, first) = try setUp(store)
        defer { app.close() }
        for (path, events) in [("created", ["subscriber.created"]), ("deleted", ["subscriber.deleted"])] {
            let created = try app.send(
                "POST", "/v1/webhooks", json: ["url": "http://127.0.0.1:9/\(path)", "events": events],
                headers: tenant.backend)
            #expect(created.status == 201)
        }
        // Twice: the first change fills the writer's cache, the second is answered from it.
        for id in ["fan1", "fan2"] {
            #expect(try app.send("PUT", "/v1/subscribers/\(id)", json: [:], headers: tenant.backend).status == 201)
        }
        #expect(try app.store.read { try $0.pendingWebhookDeliveryCount() } == 4)
        let transport = ScriptedTransport([])
        #expect(worker(app, transport, schedule: [1]).runOnce() == 4)
        let sent = transport.sent.withLock { $0 }
        #expect(
            sent.map(\.url).sorted() == [
                "http://127.0.0.1:9/created", "http://127.0.0.1:9/created", "http://127.0.0.1:9/hook",
                "http://127.0.0.1:9/hook",
            ])
        let byEvent = Dictionary(grouping: sent) { $0.headers["webhook-id"] ?? "" }
        #expect(byEvent.count == 2)
        for (_, copies) in byEvent {
            #expect(copies.count == 2)
            #expect(Set(copies.map(\.body)).count == 1)
        }
        #expect(try deliveries(app, tenant, first).count == 2)
    }

    /// The worker polls every 200 ms; a poll with nothing due must not be a write job (on SQLite
    /// each ends in a sync of the log). Only a poll that finds something writes: claim, record.
    @Test(arguments: StoreKind.available) func aPollWithNothingDueWritesNothing(_ store: StoreKind) throws {
        let (app, tenant, _) = try setUp(store)
        defer { app.close() }
        let counting = WriteCountingStore(app.store)
        let worker = worker(app, ScriptedTransport([.success(500)]), schedule: [10], store: counting)
        #expect(worker.runOnce() == 0)
        #expect(counting.writes.load(ordering: .relaxed) == 0, "an empty outbox is read, not claimed")

        #expect(try app.send("PUT", "/v1/subscribers/polled", json: [:], headers: tenant.backend).status == 201)
        #expect(worker.runOnce() == 1)
        #expect(counting.writes.load(ordering: .relaxed) == 2, "a claim and the batch's record")
        #expect(worker.runOnce() == 0, "the retry is not due for 9 s or more")
        #expect(counting.writes.load(ordering: .relaxed) == 2)

        app.clock.advance(byMillis: 11_100)
        #expect(worker.runOnce() == 1)
        #expect(counting.writes.load(ordering: .relaxed) == 4)
    }

    /// The upkeep every minute reads before each of its writes too: with nothing expired and
    /// nothing pending on a disabled endpoint it writes nothing; an expired record still goes.
    @Test(arguments: StoreKind.available) func anUpkeepWithNothingToDoWritesNothing(_ store: StoreKind) throws {
        let (app, tenant, _) = try setUp(store)
        defer { app.close() }
        let counting = WriteCountingStore(app.store)
        let worker = worker(app, ScriptedTransport([]), schedule: [10], store: counting)
        var headers = tenant.backend
        headers["Idempotency-Key"] = "upkeep-1"
        #expect(try app.send("PUT", "/v1/subscribers/kept", json: [:], headers: headers).status == 201)

        worker.runMaintenance()
        #expect(counting.writes.load(ordering: .relaxed) == 0, "a fresh record and no endpoint disabled")

        app.clock.advance(byMillis: 26 * 3_600_000)  // past the 25 h the records are kept
        worker.runMaintenance()
        #expect(counting.writes.load(ordering: .relaxed) == 1, "the expired record's purge, and only that")
        let now = app.clock.now()
        #expect(try app.store.read { try $0.idempotencyRecordsExist(createdBefore: now) } == false)
    }

    @Test(arguments: StoreKind.available) func a410DisablesTheEndpointAndFailsWhatIsPending(_ store: StoreKind) throws {
        let (app, tenant, id) = try setUp(store)
        defer { app.close() }
        let transport = ScriptedTransport([.success(410)])
        let worker = worker(app, transport, schedule: [1])
        #expect(try app.send("PUT", "/v1/subscribers/g1", json: [:], headers: tenant.backend).status == 201)
        #expect(try app.send("PUT", "/v1/subscribers/g2", json: [:], headers: tenant.backend).status == 201)
        // One at a time: the first answer (410) must stop the second from going out.
        #expect(try app.store.read { try $0.pendingWebhookDeliveryCount() } == 2)
        #expect(worker.runOnce() == 1)
        #expect(transport.sent.withLock { $0.count } == 1)
        let webhook =
            try app.send("GET", "/v1/webhooks/\(id)", headers: tenant.backend).data?["webhook"] as? [String: Any]
        #expect(webhook?["enabled"] as? Bool == false)
        let attempts = try deliveries(app, tenant, id)
        #expect(attempts.allSatisfy { $0["status"] as? String == "failed" })
        #expect(try app.store.read { try $0.pendingWebhookDeliveryCount() } == 0)
        // A disabled endpoint no longer wants events.
        #expect(try app.send("PUT", "/v1/subscribers/g3", json: [:], headers: tenant.backend).status == 201)
        #expect(try app.store.read { try $0.pendingWebhookDeliveryCount() } == 0)
    }

    /// Identify's link writes two events in one job (on SQLite, one outbox row for both). A batch
    /// that takes only one of them leaves the other pending; each keeps its delivery id from the
    /// moment it is listed as pending until it is recorded, and pages never show one twice.
    @Test(arguments: StoreKind.available) func aJobsEventsKeepTheirIdsWhenABatchTakesOnlySomeOfThem(
        _ store: StoreKind
    ) throws {
        let (app, tenant, id) = try setUp(store)
        defer { app.close() }
        let anonymous = "anon_" + String(repeating: "k", count: 21)
        let identified = try app.send(
            "POST", "/v1/identify", json: ["externalId": "kept-ids", "anonymousId": anonymous], headers: tenant.app)
        #expect(identified.status == 200)
        func listed() throws -> [(id: String, type: String, status: String)] {
            try deliveries(app, tenant, id).map {
                ($0["id"] as? String ?? "", $0["type"] as? String ?? "", $0["status"] as? String ?? "")
            }
        }
        func paged() throws -> [String] {
            var ids: [String] = []
            var cursor: String?
            repeat {
                let path = "/v1/webhooks/\(id)/deliveries?limit=1" + (cursor.map { "&cursor=\($0)" } ?? "")
                let page = try app.send("GET", path, headers: tenant.backend).data
                ids += ((page?["deliveries"] as? [[String: Any]]) ?? []).compactMap { $0["id"] as? String }
                cursor = page?["nextCursor"] as? String
            } while cursor != nil && ids.count < 10
            return ids
        }
        // On SQLite the job wrote one outbox row holding both events, and nothing else yet.
        func outboxRows() throws -> [Int64]? {
            guard store == .sqlite else { return nil }
            let db = try Database(path: app.database)
            defer { db.close() }
            return try db.query("SELECT key - first_key + 1 FROM webhook_outbox").compactMap { $0.int(0) }
        }
        #expect(try outboxRows() ?? [2] == [2])
        let before = try listed()
        #expect(before.map(\.status) == ["pending", "pending"])
        #expect(Set(before.map(\.type)) == ["subscriber.created", "subscriber.merged"])
        #expect(Set(before.map(\.id)).count == 2)
        #expect(try paged() == before.map(\.id))

        let transport = ScriptedTransport([])
        let worker = worker(app, transport, schedule: [1], batchSize: 1)
        #expect(worker.runOnce() == 1)
        let half = try listed()
        #expect(half.map(\.id) == before.map(\.id), "each attempt keeps the id it was listed with")
        #expect(half.map(\.status).sorted() == ["pending", "succeeded"])
        #expect(try paged() == before.map(\.id))
        #expect(try app.store.read { try $0.pendingWebhookDeliveryCount() } == 1)
        #expect(try outboxRows() ?? [2] == [2], "the row stays until its last event is recorded")

        #expect(worker.runOnce() == 1)
        #expect(worker.runOnce() == 0, "nothing is sent twice")
        let after = try listed()
        #expect(after.map(\.id) == before.map(\.id))
        #expect(after.map(\.status) == ["succeeded", "succeeded"])
        #expect(try outboxRows() ?? [] == [])
        #expect(try app.store.read { try $0.pendingWebhookDeliveryCount() } == 0)
        let sent = transport.sent.withLock { $0 }
        #expect(Set(sent.map { $0.headers["webhook-id"] ?? "" }).count == 2)
        // An event still waiting goes with its endpoint.
        #expect(try app.send("PUT", "/v1/subscribers/kept-2", json: [:], headers: tenant.backend).status == 201)
        #expect(try app.store.read { try $0.pendingWebhookDeliveryCount() } == 1)
        #expect(try app.send("DELETE", "/v1/webhooks/\(id)", headers: tenant.backend).status == 200)
        #expect(try app.store.read { try $0.pendingWebhookDeliveryCount() } == 0)
        #expect(try outboxRows() ?? [] == [])
    }

    /// On SQLite the events of a write group are written together just before it commits. Only
    /// the jobs whose work stayed count; an endpoint deleted or disabled in the same group gets
    /// nothing pending. The writer is held in a first job so the next ones queue into one group.
    @Test(arguments: StoreKind.available) func aGroupQueuesTheEventsOfTheJobsItKeepsOnly(_ store: StoreKind) throws {
        let (app, tenant, id) = try setUp(store)
        defer { app.close() }
        let second = try app.send(
            "POST", "/v1/webhooks", json: ["url": "http://127.0.0.1:9/second"], headers: tenant.backend)
        let secondID = try #require((second.data?["webhook"] as? [String: Any])?["id"] as? String)
        let (tenantID, now) = (tenant.id, app.clock.now())
        let keys = try [id, secondID].map { endpoint in
            try #require(try app.store.read { try $0.webhookEndpoint(tenantID: tenantID, id: endpoint) }).key
        }
        struct Refused: Error {}
        func group(_ jobs: [(eventID: String, then: @Sendable (any IdentityWriteContext) throws -> Void)]) {
            let (started, gate, done) = (Semaphore(), Semaphore(), Semaphore())
            app.store.write({ _ in
                started.signal()
                gate.wait()
            }) { _ in done.signal() }
            // Queued only once the writer is inside the held job: had it not yet taken its queue,
            // it could take the held job and the first of these as one batch, and commit that
            // one apart from the rest.
            started.wait()
            for job in jobs {
                app.store.write({ ctx in
                    _ = try ctx.enqueueWebhookEvent(
                        id: job.eventID, tenantID: tenantID, type: "subscriber.created",
                        data: #"{"subscriberId":"grouped"}"#, now: now, endpointKey: nil)
                    try job.then(ctx)
                }) { _ in done.signal() }
            }
            gate.signal()
            for _ in 0...jobs.count { done.wait() }
        }
        // Each event goes to both endpoints; the refused job's to neither.
        group([("evt_kept_1", { _ in }), ("evt_refused", { _ in throw Refused() }), ("evt_kept_2", { _ in })])
        #expect(try app.store.read { try $0.pendingWebhookDeliveryCount() } == 4)
        if store == .sqlite {
            let db = try Database(path: app.database)
            defer { db.close() }
            let rows = try db.query("SELECT key - first_key + 1 FROM webhook_outbox").compactMap { $0.int(0) }
            #expect(rows == [2, 2], "one row per endpoint for the whole group")
        }
        let transport = ScriptedTransport([])
        #expect(worker(app, transport, schedule: [1]).runOnce() == 4)
        let sent = transport.sent.withLock { $0 }.map { $0.headers["webhook-id"] ?? "" }
        #expect(sent.sorted() == ["evt_kept_1", "evt_kept_1", "evt_kept_2", "evt_kept_2"])

        // The second endpoint is deleted by the job that queued the event: the first alone gets it.
        group([("evt_deleted", { ctx in try ctx.deleteWebhookEndpoint(key: keys[1]) })])
        #expect(try app.store.read { try $0.pendingWebhookDeliveryCount() } == 1)
        // The first is disabled in the next job of the group: its waiting events fail, both. On
        // SQLite only: PostgreSQL runs these two jobs at once, and an event queued while the
        // disable commits may stay pending (never sent: the claim takes enabled endpoints only).
        guard store == .sqlite else { return }
        group([
            ("evt_disabled", { _ in }),
            ("evt_after", { ctx in try ctx.disableWebhookEndpoint(key: keys[0], now: now) }),
        ])
        #expect(try app.store.read { try $0.pendingWebhookDeliveryCount() } == 0)
        let listed = try deliveries(app, tenant, id)
        #expect(
            listed.prefix(3).compactMap { $0["eventId"] as? String } == ["evt_after", "evt_disabled", "evt_deleted"])
        #expect(
            listed.prefix(3).allSatisfy {
                $0["status"] as? String == "failed" && $0["error"] as? String == "endpoint disabled"
            })
        #expect(worker(app, transport, schedule: [1]).runOnce() == 0)
    }

    /// What a PostgreSQL transaction overlapping a disable can leave behind, an attempt pending on
    /// a disabled endpoint, is made here by disabling it around the store; the worker's upkeep
    /// fails it, so the backlog drains.
    @Test(arguments: StoreKind.available) func upkeepFailsWhatIsLeftPendingOnADisabledEndpoint(_ store: StoreKind)
        throws
    {
        let (app, tenant, id) = try setUp(store)
        defer { app.close() }
        #expect(try app.send("PUT", "/v1/subscribers/left", json: [:], headers: tenant.backend).status == 201)
        switch store {
        case .sqlite:
            let db = try Database(path: app.database)
            defer { db.close() }
            try db.execute("UPDATE webhook_endpoints SET enabled = 0", [])
        case .postgres:
            let connection = try Connection(url: app.database)
            defer { connection.close() }
            _ = try connection.execute("UPDATE webhook_endpoints SET enabled = false", [])
        }
        #expect(try app.store.read { try $0.pendingWebhookDeliveryCount() } == 1)
        let transport = ScriptedTransport([])
        let worker = worker(app, transport, schedule: [1])
        #expect(worker.runOnce() == 0, "a disabled endpoint is sent nothing")
        worker.runMaintenance()
        #expect(try app.store.read { try $0.pendingWebhookDeliveryCount() } == 0)
        let listed = try deliveries(app, tenant, id)
        #expect(listed.map { $0["status"] as? String } == ["failed"])
        #expect(listed.map { $0["error"] as? String } == ["endpoint disabled"])
        #expect(transport.sent.withLock { $0.isEmpty })
    }

    @Test(arguments: StoreKind.available) func aClaimKeepsOtherWorkersOffUntilItsLeaseEnds(_ store: StoreKind) throws {
        let (app, tenant, _) = try setUp(store)
        defer { app.close() }
        #expect(try app.send("PUT", "/v1/subscribers/leased", json: [:], headers: tenant.backend).status == 201)
        let start = app.clock.now()
        func claim(at offset: Int64) throws -> [Int64] {
            try app.store.writeAndWait { ctx in
                try ctx.claimDueWebhookDeliveries(
                    now: Timestamp(millis: start.millis + offset), limit: 10,
                    leaseUntil: Timestamp(millis: start.millis + offset + 60_000))
            }.map(\.key)
        }
        let first = try claim(at: 0)
        #expect(first.count == 1)
        #expect(try claim(at: 0).isEmpty, "another worker does not take a claimed attempt")
        #expect(try claim(at: 59_999).isEmpty)
        // The claimer died without an answer: the attempt comes back, the same attempt.
        #expect(try claim(at: 60_000) == first)
    }

    /// The writer's filter cache never answers "not wanted" for an endpoint that exists: not after a
    /// delete that rolled back, not after a create in the same group.
    @Test(arguments: StoreKind.available) func theWantedProbeFollowsEndpointChangesAndRollbacks(_ store: StoreKind)
        throws
    {
        let (app, tenant, id) = try setUp(store)
        defer { app.close() }
        let type = WebhookEventType.subscriberCreated.rawValue
        let tenantID = tenant.id
        #expect(try app.store.writeAndWait { try $0.webhookWanted(tenantID: tenantID, type: type) })
        struct Abort: Error {}
        #expect(throws: Abort.self) {
            try app.store.writeAndWait { ctx -> Void in
                let endpoint = try #require(try ctx.webhookEndpoint(tenantID: tenantID, id: id))
                try ctx.deleteWebhookEndpoint(key: endpoint.key)
                #expect(try ctx.webhookWanted(tenantID: tenantID, type: type) == false)
                throw Abort()
            }
        }
        #expect(
            try app.store.writeAndWait { try $0.webhookWanted(tenantID: tenantID, type: type) },
            "the delete rolled back")
        #expect(try app.send("DELETE", "/v1/webhooks/\(id)", headers: tenant.backend).status == 200)
        #expect(try app.store.writeAndWait { try $0.webhookWanted(tenantID: tenantID, type: type) } == false)
        let created = try app.send(
            "POST", "/v1/webhooks", json: ["url": "http://127.0.0.1:9/again", "events": ["subscriber.deleted"]],
            headers: tenant.backend)
        #expect(created.status == 201)
        #expect(try app.store.writeAndWait { try $0.webhookWanted(tenantID: tenantID, type: type) } == false)
        #expect(try app.store.writeAndWait { try $0.webhookWanted(tenantID: tenantID, type: "subscriber.deleted") })
    }

    @Test(arguments: StoreKind.available) func theSignatureIsStandardWebhooks(_ store: StoreKind) throws {
        // The example of the Standard Webhooks specification, checked with Python's hmac.
        let signature = try WebhookSignature.sign(
            secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", id: "msg_p5jXN8AQM9LWM0D4loKWxJek",
            timestamp: 1_614_265_330, body: Array(#"{"test": 2432232314}"#.utf8))
        #expect(signature == "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=")
        // What the worker sends is what the receiver's check accepts (and the wrong secret is not).
        let transport = ScriptedTransport([])
        let (app, tenant, _) = try setUp(store)
        defer { app.close() }
        let created = try app.send(
            "POST", "/v1/webhooks", json: ["url": "http://127.0.0.1:9/b"], headers: tenant.backend)
        let secret = try #require(created.data?["secret"] as? String)
        #expect(try WebhookSignature.key(fromSecret: secret).count == 32)
        #expect(try app.send("PUT", "/v1/subscribers/signed", json: [:], headers: tenant.backend).status == 201)
        _ = worker(app, transport, schedule: []).runOnce()
        let sent = try #require(transport.sent.withLock { $0.first { $0.url.hasSuffix("/b") } })
        let header = try #require(sent.headers["webhook-signature"])
        let id = try #require(sent.headers["webhook-id"])
        let timestamp = try #require(sent.headers["webhook-timestamp"].flatMap { Int64($0) })
        #expect(
            try WebhookSignature.verify(
                secret: secret, id: id, timestamp: timestamp, body: sent.body, signatureHeader: header))
        #expect(
            try !WebhookSignature.verify(
                secret: WebhookSignature.generateSecret(), id: id, timestamp: timestamp, body: sent.body,
                signatureHeader: header))
    }

    @Test func destinationsParseAndPrivateAddressesAreRefused() throws {
        #expect(
            WebhookDestination(url: "https://h.example:8443/a/b?c=d#frag")
                == WebhookDestination(url: "https://h.example:8443/a/b?c=d"))
        let parsed = try #require(WebhookDestination(url: "http://[::1]:81?x"))
        #expect(parsed.host == "::1" && parsed.port == 81 && parsed.target == "/?x" && !parsed.secure)
        for bad in ["ftp://x", "http://", "http://user@host/", "http://h:0/", "http://h:70000/", "http://h /"] {
            #expect(WebhookDestination(url: bad) == nil, "\(bad)")
        }
        let strict = DestinationPolicy(allowPrivateNetworks: false)
        for url in ["http://127.0.0.1/", "http://100.64.0.1/", "http://[::ffff:10.0.0.1]/", "http://224.0.0.1/"] {
            #expect(throws: DestinationError.self, "\(url)") { try strict.check(url) }
        }
        #expect(throws: Never.self) { try strict.check("http://8.8.8.8/") }
        #expect(throws: Never.self) { try DestinationPolicy(allowPrivateNetworks: true).check("http://127.0.0.1/") }
    }
}

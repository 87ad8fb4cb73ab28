import Foundation
import Identity
import JSON
import Migrations
import Postgres
import SQLite
import Synchronization
import TestSupport
import Testing

@testable import PostgresStorage
@testable import Storage

/// The SQL of the identity store, run through the domain operations on a real database file
/// (and, by `everyScenarioOnEveryStore`, on a PostgreSQL database too).
@Suite struct SQLiteContextTests {
    /// The SQLite connection and its file; nil on PostgreSQL.
    let db: Database!
    let path: String?
    let ctx: any IdentityWriteContext
    /// The PostgreSQL database and connection, when on PostgreSQL.
    private let postgres: (database: PostgresTestDatabase, connection: Connection)?
    let caller: Caller
    let backend: Caller
    let now = Timestamp(millis: 1_800_000_000_000)

    init() throws { try self.init(.sqlite) }

    init(_ store: StoreKind) throws {
        if store == .postgres, let database = try PostgresTestDatabase.make() {
            _ = try PostgresIdentityStore.migrate(url: database.url)
            let connection = try Connection(url: database.url)
            postgres = (database, connection)
            db = nil
            path = nil
            ctx = PostgresContext(db: connection)
        } else {
            let path = FileManager.default.temporaryDirectory.appendingPathComponent(
                "storage-\(UUID().uuidString).sqlite"
            ).path
            db = try Database(path: path)
            self.path = path
            _ = try SQLite.Migrator(migrations: try SQLiteIdentityStore.bundledMigrations()).migrate(db)
            ctx = SQLiteContext(db: db)
            postgres = nil
        }
        try ctx.insertWorkspace(id: "ws_test", name: "test", now: now)
        let tenant = try Tenancy.createTenant(name: "acme", workspaceID: "ws_test", in: ctx, now: now).tenant
        caller = Caller(tenant: tenant, role: .app)
        backend = Caller(tenant: tenant, role: .backend)
    }

    private func events(_ ids: [String], at millis: Int64) -> [NewEvent] {
        ids.enumerated().map { i, id in
            NewEvent(
                clientID: id, name: "e", timestamp: Timestamp(millis: millis + Int64(i)), receivedAt: now,
                propertiesJSON: "{\"i\":\(i)}")
        }
    }

    private func count(_ table: String, subscriberKey: Int64) throws -> Int64 {
        if let postgres {
            return try postgres.connection.queryOne(
                "SELECT count(*) FROM \(table) WHERE subscriber_key = $1", [subscriberKey])?.int(0) ?? -1
        }
        return try db.queryOne("SELECT count(*) FROM \(table) WHERE subscriber_key = ?", [subscriberKey])?.int(0) ?? -1
    }

    private func count(_ table: String, key: Int64) throws -> Int64 {
        if let postgres {
            return try postgres.connection.queryOne("SELECT count(*) FROM \(table) WHERE key = $1", [key])?.int(0) ?? -1
        }
        return try db.queryOne("SELECT count(*) FROM \(table) WHERE key = ?", [key])?.int(0) ?? -1
    }

    /// The store-internal purge step of either engine.
    private func purgeRetired(limit: Int) throws -> Bool {
        if let ctx = ctx as? PostgresContext { return try ctx.purgeRetired(limit: limit) }
        return try (ctx as! SQLiteContext).purgeRetired(limit: limit)
    }

    private func count(_ table: String) throws -> Int64 {
        if let postgres { return try postgres.connection.queryOne("SELECT count(*) FROM \(table)")?.int(0) ?? -1 }
        return try db.queryOne("SELECT count(*) FROM \(table)")?.int(0) ?? -1
    }

    @Test func renameKeepsTheRowAndItsSequence() throws {
        let anon = "anon_" + String(repeating: "a", count: 21)
        _ = try Operations.ingest(
            events(["e1", "e2"], at: 1000), subscriberID: try IDRules.subscriberID(anon), caller: caller, in: ctx,
            now: now)
        let anonKey = try #require(try ctx.subscriberKey(tenantID: caller.tenant.id, alias: anon))
        let before = try #require(try ctx.subscriber(key: anonKey))

        let result = try Operations.identify(
            IdentifyCommand(externalID: "user_1", anonymousID: anon), caller: caller, in: ctx, now: now)
        #expect(result.merge?.shape == .rename)
        #expect(result.subscriber.key == before.key)
        #expect(try ctx.subscriberKey(tenantID: caller.tenant.id, alias: anon) == before.key)
        let timeline = try ctx.events(key: before.key, afterSeq: 0, limit: 10)
        #expect(timeline.map(\.seq) == [1, 2, 3])
        #expect(timeline.map(\.event.clientID) == ["e1", "e2", "$subscriber.merged:\(anon)"])
    }

    @Test func absorbAppendsEventsInOrderAndSkipsClientIDsTheTargetHas() throws {
        let anon = "anon_" + String(repeating: "b", count: 21)
        _ = try Operations.upsert(
            externalID: "user_2", email: nil, attributes: nil, subscribeEmail: nil, caller: backend, in: ctx, now: now)
        _ = try Operations.ingest(
            events(["shared", "t1"], at: 5000), subscriberID: try IDRules.subscriberID("user_2"), caller: caller,
            in: ctx, now: now)
        _ = try Operations.ingest(
            events(["a1", "shared", "a2", "a3"], at: 100), subscriberID: try IDRules.subscriberID(anon), caller: caller,
            in: ctx, now: now)
        let sourceKey = try #require(try ctx.subscriberKey(tenantID: caller.tenant.id, alias: anon))

        let result = try Operations.identify(
            IdentifyCommand(externalID: "user_2", anonymousID: anon), caller: caller, in: ctx, now: now)
        #expect(result.merge?.shape == .absorb)
        #expect(result.merge?.eventsMoved == 3)
        let timeline = try ctx.events(key: result.subscriber.key, afterSeq: 0, limit: 100)
        #expect(timeline.map(\.seq) == Array(1...6))
        #expect(timeline.map(\.event.clientID) == ["shared", "t1", "a1", "a2", "a3", "$subscriber.merged:\(anon)"])
        // Copied events keep their own timestamps: a1 was at 100, a2 at 102, a3 at 103.
        #expect(timeline[2...4].map(\.event.timestamp.millis) == [100, 102, 103])
        // The source is retired: unreachable at once, its events deleted later in chunks.
        #expect(try ctx.subscriber(key: sourceKey) == nil)
        #expect(try ctx.subscriberKey(tenantID: caller.tenant.id, alias: anon) == result.subscriber.key)
        #expect(
            try ctx.listSubscribers(tenantID: caller.tenant.id, afterKey: 0, limit: 10, anonymous: nil, verified: nil)
                .map(\.key) == [result.subscriber.key])
        for table in ["aliases", "attributes", "push_subscriptions", "preferences", "devices"] {
            #expect(try count(table, subscriberKey: sourceKey) == 0)
        }
        var jobs = 0
        while try purgeRetired(limit: 2) { jobs += 1 }
        #expect(jobs == 3)  // 4 events: two full chunks, then the row
        #expect(try count("events", subscriberKey: sourceKey) == 0)
        #expect(try count("subscribers", key: sourceKey) == 0)
        #expect(result.subscriber.eventCount == 6 && result.subscriber.lastSeq == 6)
    }

    /// An absorbed subscriber's events, as the person's timeline shows them, from the absorb's
    /// commit on: on SQLite they still sit on the source and move in later jobs (migration
    /// 0006); on PostgreSQL they were copied in the merge. Both read alike at every step.
    @Test func absorbedEventsReadAsThePersonsWhileTheyMove() throws {
        let anon = "anon_" + String(repeating: "m", count: 21)
        let person = try IDRules.subscriberID("user_m")
        _ = try Operations.ingest(
            events(["t1", "t2"], at: 5000), subscriberID: person, caller: caller, in: ctx, now: now)
        _ = try Operations.ingest(
            events(["a1", "a2", "a3", "a4", "a5"], at: 100), subscriberID: try IDRules.subscriberID(anon),
            caller: caller, in: ctx, now: now)
        let sourceKey = try #require(try ctx.subscriberKey(tenantID: caller.tenant.id, alias: anon))

        let result = try Operations.identify(
            IdentifyCommand(externalID: "user_m", anonymousID: anon), caller: caller, in: ctx, now: now)
        #expect(result.merge?.shape == .absorb && result.merge?.eventsMoved == 5)
        let key = result.subscriber.key
        if db != nil {
            #expect(try count("event_moves") == 1)
            #expect(try count("events", subscriberKey: key) == 3)  // t1, t2, the marker: the rest wait
        }
        var expected = ["t1", "t2", "a1", "a2", "a3", "a4", "a5", "$subscriber.merged:\(anon)"]
        func readsAlike() throws {
            let timeline = try ctx.events(key: key, afterSeq: 0, limit: 100)
            #expect(timeline.map(\.event.clientID) == expected)
            #expect(timeline.map(\.seq) == Array(1...Int64(expected.count)))
            #expect(timeline[2].event.timestamp.millis == 100)  // a1 keeps its own time
            let page = try ctx.events(key: key, afterSeq: 3, limit: 2)
            #expect(page.map(\.seq) == [4, 5] && page.map(\.event.clientID) == ["a2", "a3"])
            #expect(try ctx.events(key: key, afterSeq: 6, limit: 2).map(\.seq) == [7, 8])
        }
        try readsAlike()

        // Retried through the person, an absorbed event is a duplicate; a new one comes next.
        let sent = try Operations.ingest(
            events(["a3", "n1"], at: 9000), subscriberID: person, caller: caller, in: ctx, now: now)
        #expect(sent.accepted == 1 && sent.duplicates == 1)
        expected.append("n1")
        try readsAlike()

        // Two events a job: every step between reads the same timeline.
        var jobs = 0
        while try purgeRetired(limit: 2) {
            jobs += 1
            try readsAlike()
        }
        #expect(jobs >= 1)
        #expect(try count("events", subscriberKey: sourceKey) == 0)
        #expect(try count("subscribers", key: sourceKey) == 0)
        #expect(try count("events", subscriberKey: key) == 9)
        if db != nil { #expect(try count("event_moves") == 0) }
        #expect(try ctx.subscriber(key: key)?.lastSeq == 9)
    }

    /// A second absorb into a person whose first absorb's events are still moving finishes that
    /// move first, so a retried id across the two anonymous ids is stored once.
    @Test func aSecondAbsorbFinishesTheFirstMove() throws {
        let (anon1, anon2) = ("anon_" + String(repeating: "p", count: 21), "anon_" + String(repeating: "q", count: 21))
        let person = try IDRules.subscriberID("user_p")
        _ = try Operations.ingest(events(["t1"], at: 5000), subscriberID: person, caller: caller, in: ctx, now: now)
        _ = try Operations.ingest(
            events(["a1", "a2", "a3"], at: 100), subscriberID: try IDRules.subscriberID(anon1), caller: caller,
            in: ctx, now: now)
        _ = try Operations.ingest(
            events(["a2", "b1"], at: 200), subscriberID: try IDRules.subscriberID(anon2), caller: caller, in: ctx,
            now: now)
        let first = try Operations.identify(
            IdentifyCommand(externalID: "user_p", anonymousID: anon1), caller: caller, in: ctx, now: now)
        let second = try Operations.identify(
            IdentifyCommand(externalID: "user_p", anonymousID: anon2), caller: caller, in: ctx, now: now)
        #expect(first.merge?.eventsMoved == 3 && second.merge?.eventsMoved == 1)
        if db != nil { #expect(try count("event_moves") == 0) }  // the first finished; the second shared "a2"
        let timeline = try ctx.events(key: second.subscriber.key, afterSeq: 0, limit: 100)
        #expect(
            timeline.map(\.event.clientID) == [
                "t1", "a1", "a2", "a3", "$subscriber.merged:\(anon1)", "b1", "$subscriber.merged:\(anon2)",
            ])
        #expect(timeline.map(\.seq) == Array(1...7))
        while try purgeRetired(limit: 2) {}
        #expect(try count("events") == 7)
    }

    /// Erasing the person while an absorb's events move leaves nothing of either.
    @Test func erasingThePersonWhileEventsMoveLeavesNothing() throws {
        let anon = "anon_" + String(repeating: "r", count: 21)
        _ = try Operations.ingest(
            events(["a1", "a2", "a3"], at: 100), subscriberID: try IDRules.subscriberID(anon), caller: caller,
            in: ctx, now: now)
        _ = try Operations.upsert(
            externalID: "user_r", email: nil, attributes: nil, subscribeEmail: nil, caller: backend, in: ctx, now: now)
        _ = try Operations.identify(
            IdentifyCommand(externalID: "user_r", anonymousID: anon), caller: caller, in: ctx, now: now)
        #expect(try Operations.delete(id: try IDRules.subscriberID("user_r"), caller: backend, in: ctx, now: now))
        if db != nil { #expect(try count("event_moves") == 0) }
        while try purgeRetired(limit: 2) {}
        for table in ["subscribers", "aliases", "events"] {
            #expect(try count(table) == 0, "\(table) still has rows")
        }
    }

    /// `buzzkit copy` finishes pending moves first: the raw tables then hold each event on its person.
    @Test func finishingMovesPutsEveryEventOnItsPerson() throws {
        let anon = "anon_" + String(repeating: "s", count: 21)
        _ = try Operations.upsert(
            externalID: "user_s", email: nil, attributes: nil, subscribeEmail: nil, caller: backend, in: ctx, now: now)
        let many = (0..<2500).map { "c\($0)" }
        _ = try Operations.ingest(
            events(many, at: 100), subscriberID: try IDRules.subscriberID(anon), caller: caller, in: ctx, now: now)
        let result = try Operations.identify(
            IdentifyCommand(externalID: "user_s", anonymousID: anon), caller: caller, in: ctx, now: now)
        let before = try ctx.events(key: result.subscriber.key, afterSeq: 0, limit: 3000)
        #expect(try count("events", subscriberKey: result.subscriber.key) == 1)  // the marker alone

        #expect(try SQLiteIdentityStore.finishEventMoves(path: try #require(path)) == 2500)
        #expect(try count("event_moves") == 0)
        #expect(try count("events", subscriberKey: result.subscriber.key) == 2501)
        let after = try ctx.events(key: result.subscriber.key, afterSeq: 0, limit: 3000)
        #expect(after.map(\.seq) == before.map(\.seq) && after.map(\.event.clientID) == before.map(\.event.clientID))
        #expect(try SQLiteIdentityStore.finishEventMoves(path: try #require(path)) == 0)
    }

    @Test func pushSubscriptionsMoveAndTheCapEvictsTheLeastRecentlySeen() throws {
        let a = try ctx.insertSubscriber(tenantID: caller.tenant.id, id: "user_a", anonymous: false, now: now)
        let b = try ctx.insertSubscriber(tenantID: caller.tenant.id, id: "user_b", anonymous: false, now: now)
        for i in 0..<22 {
            try ctx.upsertPushSubscription(
                tenantID: caller.tenant.id, key: a.key, deviceID: "d\(i)", token: "t\(i)", platform: "ios",
                now: Timestamp(millis: now.millis + Int64(i)))
        }
        #expect(try ctx.evictPushSubscriptions(key: a.key, keep: 20) == 2)
        let kept = try ctx.pushSubscriptions(key: a.key).map(\.deviceID)
        #expect(kept.count == 20 && !kept.contains("d0") && !kept.contains("d1") && kept.contains("d21"))

        // The same token under a new device id (a reinstall) leaves the old registration.
        try ctx.upsertPushSubscription(
            tenantID: caller.tenant.id, key: b.key, deviceID: "new", token: "t21", platform: "ios", now: now)
        #expect(try ctx.pushSubscriptions(key: a.key).contains { $0.token == "t21" } == false)
        // The same device id moves to whoever registers it last.
        try ctx.upsertPushSubscription(
            tenantID: caller.tenant.id, key: b.key, deviceID: "d20", token: "t20", platform: "ios", now: now)
        #expect(try ctx.pushSubscriptions(key: b.key).map(\.deviceID).sorted() == ["d20", "new"])
    }

    @Test func aDeviceThatMovesTakesItsContextAlong() throws {
        let a = try ctx.insertSubscriber(tenantID: caller.tenant.id, id: "user_old", anonymous: false, now: now)
        let b = try ctx.insertSubscriber(tenantID: caller.tenant.id, id: "user_new", anonymous: false, now: now)
        try ctx.upsertPushSubscription(
            tenantID: caller.tenant.id, key: a.key, deviceID: "phone", token: "t", platform: "ios", now: now)
        try ctx.upsertDevice(key: a.key, DeviceRecord(deviceID: "phone", model: "iPhone", lastSeenAt: now))
        try ctx.upsertPushSubscription(
            tenantID: caller.tenant.id, key: b.key, deviceID: "phone", token: "t", platform: "ios", now: now)
        #expect(try ctx.devices(key: a.key).isEmpty)
        #expect(try ctx.pushSubscriptions(key: a.key).isEmpty)
        #expect(try ctx.pushSubscriptions(key: b.key).map(\.deviceID) == ["phone"])
    }

    @Test func deviceReportsNeverEraseStoredFields() throws {
        let s = try ctx.insertSubscriber(tenantID: caller.tenant.id, id: "user_d", anonymous: false, now: now)
        try ctx.upsertDevice(
            key: s.key,
            DeviceRecord(deviceID: "d", platform: "ios", appVersion: "1.0", model: "iPhone", lastSeenAt: now))
        try ctx.upsertDevice(
            key: s.key, DeviceRecord(deviceID: "d", appVersion: "1.1", lastSeenAt: Timestamp(millis: now.millis + 5)))
        let device = try #require(try ctx.devices(key: s.key).first)
        #expect(device.platform == "ios" && device.appVersion == "1.1" && device.model == "iPhone")
        #expect(device.lastSeenAt.millis == now.millis + 5)
    }

    @Test func deleteErasesEveryRowOfThePerson() throws {
        let anon = "anon_" + String(repeating: "c", count: 21)
        _ = try Operations.ingest(
            events(["x"], at: 1), subscriberID: try IDRules.subscriberID(anon), caller: caller, in: ctx, now: now)
        _ = try Operations.registerPush(
            PushRegistration(deviceID: "d", token: "tok", platform: "ios", permission: "authorized", device: nil),
            subscriberID: try IDRules.subscriberID(anon), caller: caller, in: ctx, now: now)
        _ = try Operations.setPreferences(
            [("news", true)], subscriberID: try IDRules.subscriberID(anon), caller: caller, in: ctx, now: now)
        _ = try Operations.identify(
            IdentifyCommand(externalID: "user_del", anonymousID: anon, attributes: ["plan": "pro"]), caller: caller,
            in: ctx, now: now)
        #expect(try Operations.delete(id: try IDRules.subscriberID(anon), caller: backend, in: ctx, now: now))
        for table in ["subscribers", "aliases", "attributes", "push_subscriptions", "preferences", "devices", "events"]
        {
            #expect(try count(table) == 0, "\(table) still has rows")
        }
        #expect(
            try Operations.delete(id: try IDRules.subscriberID("user_del"), caller: backend, in: ctx, now: now) == false
        )
    }

    @Test func listPagesByKeyWithFilters() throws {
        for i in 0..<5 {
            _ = try ctx.insertSubscriber(tenantID: caller.tenant.id, id: "u\(i)", anonymous: i % 2 == 0, now: now)
        }
        let first = try ctx.listSubscribers(
            tenantID: caller.tenant.id, afterKey: 0, limit: 2, anonymous: nil, verified: nil)
        let second = try ctx.listSubscribers(
            tenantID: caller.tenant.id, afterKey: first.last!.key, limit: 10, anonymous: nil, verified: nil)
        #expect((first + second).map(\.id) == ["u0", "u1", "u2", "u3", "u4"])
        let anonymous = try ctx.listSubscribers(
            tenantID: caller.tenant.id, afterKey: 0, limit: 10, anonymous: true, verified: nil)
        #expect(anonymous.map(\.id) == ["u0", "u2", "u4"])
        #expect(
            try ctx.listSubscribers(tenantID: "tn_other", afterKey: 0, limit: 10, anonymous: nil, verified: nil).isEmpty
        )
    }

    /// The scenarios above, each on a fresh database: both engines must behave the same.
    @Test(arguments: StoreKind.available) func everyScenarioOnEveryStore(_ store: StoreKind) throws {
        for scenario in Self.scenarios {
            try scenario(try SQLiteContextTests(store))
        }
    }

    nonisolated(unsafe) static let scenarios: [(SQLiteContextTests) throws -> Void] = [
        { try $0.renameKeepsTheRowAndItsSequence() },
        { try $0.absorbAppendsEventsInOrderAndSkipsClientIDsTheTargetHas() },
        { try $0.absorbedEventsReadAsThePersonsWhileTheyMove() },
        { try $0.aSecondAbsorbFinishesTheFirstMove() },
        { try $0.erasingThePersonWhileEventsMoveLeavesNothing() },
        { try $0.pushSubscriptionsMoveAndTheCapEvictsTheLeastRecentlySeen() },
        { try $0.deviceReportsNeverEraseStoredFields() },
        { try $0.aDeviceThatMovesTakesItsContextAlong() },
        { try $0.deleteErasesEveryRowOfThePerson() },
        { try $0.listPagesByKeyWithFilters() },
        { t in
            _ = try t.ctx.subscriberCounts(tenantID: t.caller.tenant.id)
            _ = try t.ctx.apiKeys(workspaceID: "ws_test", tenantID: t.caller.tenant.id)
            _ = try t.ctx.firstWorkspaceID()
        },
    ]

    /// Every statement the scenarios above run must use an index: no full scans on a request path.
    @Test func everyStatementUsesAnIndex() throws {
        var checked = 0
        for scenario in Self.scenarios {
            let run = try SQLiteContextTests()
            try scenario(run)
            for sql in run.db.cachedSQL where !Self.offRequestPath(sql) {
                // Unbound parameters are NULL, which is all EXPLAIN needs.
                let explain = try run.db.prepare("EXPLAIN QUERY PLAN " + sql)
                var plan: [String] = []
                while try explain.step() { plan.append(explain.row().string("detail") ?? "") }
                // `SCAN t` without an index reads the whole table.
                let scans = plan.filter {
                    $0.hasPrefix("SCAN ") && !$0.contains("INDEX") && !$0.hasPrefix("SCAN (subquery")
                        && $0 != "SCAN CONSTANT ROW"  // INSERT … SELECT of bound values
                }
                #expect(scans.isEmpty, "full scan in: \(sql)\n\(plan)")
                checked += 1
            }
        }
        #expect(checked > 30)
    }

    /// Statements no request runs: start-up migrations, the CLI's offline tenant creation, and
    /// this suite's own row counts.
    static func offRequestPath(_ sql: String) -> Bool {
        sql.hasPrefix("SAVEPOINT") || sql.hasPrefix("RELEASE") || sql.contains("schema_migrations")
            || sql.hasPrefix("SELECT count(*) FROM") || sql.hasPrefix("SELECT id FROM workspaces ORDER BY")
            // The purge job's pick of any pending move: the table's first row, not a walk of it.
            || sql.hasPrefix("SELECT source_key, target_key, seq_offset FROM event_moves LIMIT 1")
    }
}

/// The store's side of retiring: the events of an absorbed subscriber leave in background jobs.
@Suite struct RetiredPurgeTests {
    @Test func theStoreDeletesARetiredSubscribersEventsAfterTheAbsorb() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("purge-\(UUID().uuidString).sqlite")
            .path
        let store = try SQLiteIdentityStore(configuration: .init(path: path))
        defer { store.close() }
        let now = Timestamp(millis: 1_800_000_000_000)
        let anon = "anon_" + String(repeating: "c", count: 21)
        // More events than one purge chunk, so the job has to come back.
        let events = (0..<(2500)).map { i in
            NewEvent(
                clientID: "c\(i)", name: "e", timestamp: Timestamp(millis: 1000 + Int64(i)), receivedAt: now,
                propertiesJSON: nil)
        }
        let sourceKey = try store.write { ctx in
            try ctx.insertWorkspace(id: "ws_test", name: "test", now: now)
            let tenant = try Tenancy.createTenant(name: "acme", workspaceID: "ws_test", in: ctx, now: now).tenant
            let caller = Caller(tenant: tenant, role: .backend)
            _ = try Operations.upsert(
                externalID: "user_1", email: nil, attributes: nil, subscribeEmail: nil, caller: caller, in: ctx,
                now: now)
            _ = try Operations.ingest(
                events, subscriberID: try IDRules.subscriberID(anon), caller: caller, in: ctx, now: now)
            let key = try ctx.subscriberKey(tenantID: tenant.id, alias: anon)!
            let result = try Operations.identify(
                IdentifyCommand(externalID: "user_1", anonymousID: anon), caller: caller, in: ctx, now: now)
            #expect(result.merge?.shape == .absorb && result.merge?.eventsMoved == 2500)
            return key
        }
        let reader = try Database(path: path, options: DatabaseReaderPool.defaultOptions)
        defer { reader.close() }
        let deadline = ContinuousClock.now + .seconds(10)
        var left: Int64 = -1
        while ContinuousClock.now < deadline {
            left =
                try reader.queryOne(
                    "SELECT (SELECT count(*) FROM events WHERE subscriber_key = ?1) + (SELECT count(*) FROM subscribers WHERE key = ?1)",
                    [sourceKey])?.int(0) ?? -1
            if left == 0 { break }
            try reader.execute("SELECT 1")  // end the read snapshot
            usleep(10_000)
        }
        #expect(left == 0)
        #expect(try reader.queryOne("SELECT count(*) FROM events")?.int(0) == 2501)  // copies + marker
    }
}

/// The same on PostgreSQL: the store's background jobs delete the retired subscriber's events.
@Suite(.enabled(if: PostgresTestDatabase.isAvailable, "BUZZKIT_TEST_POSTGRES_URL is not set"))
struct PostgresRetiredPurgeTests {
    @Test func theStoreDeletesARetiredSubscribersEventsAfterTheAbsorb() throws {
        let test = try TestStore(.postgres)
        defer { test.close() }
        let now = Timestamp(millis: 1_800_000_000_000)
        let anon = "anon_" + String(repeating: "d", count: 21)
        let events = (0..<2500).map { i in
            NewEvent(
                clientID: "c\(i)", name: "e", timestamp: Timestamp(millis: 1000 + Int64(i)), receivedAt: now,
                propertiesJSON: nil)
        }
        let sourceKey = try test.store.writeAndWait { ctx in
            try ctx.insertWorkspace(id: "ws_test", name: "test", now: now)
            let tenant = try Tenancy.createTenant(name: "acme", workspaceID: "ws_test", in: ctx, now: now).tenant
            let caller = Caller(tenant: tenant, role: .backend)
            _ = try Operations.upsert(
                externalID: "user_1", email: nil, attributes: nil, subscribeEmail: nil, caller: caller, in: ctx,
                now: now)
            _ = try Operations.ingest(
                events, subscriberID: try IDRules.subscriberID(anon), caller: caller, in: ctx, now: now)
            let key = try ctx.subscriberKey(tenantID: tenant.id, alias: anon)!
            _ = try Operations.identify(
                IdentifyCommand(externalID: "user_1", anonymousID: anon), caller: caller, in: ctx, now: now)
            return key
        }
        let reader = try Connection(url: test.database)
        let deadline = ContinuousClock.now + .seconds(10)
        var left: Int64 = -1
        while ContinuousClock.now < deadline {
            left = try reader.queryOne(
                "SELECT (SELECT count(*) FROM events WHERE subscriber_key = $1) + (SELECT count(*) FROM subscribers WHERE key = $1)",
                [sourceKey])!.int(0)
            if left == 0 { break }
            usleep(10_000)
        }
        #expect(left == 0)
        #expect(try reader.queryOne("SELECT count(*) FROM events")!.int(0) == 2501)  // copies + marker
    }
}

/// Group commit on PostgreSQL: queued writes share one transaction, and one that fails rolls
/// back only its own savepoint.
@Suite(.enabled(if: PostgresTestDatabase.isAvailable, "BUZZKIT_TEST_POSTGRES_URL is not set"))
struct PostgresGroupCommitTests {
    struct Refused: Error {}

    @Test func aFailingWriteInAGroupRollsBackOnlyItself() throws {
        // One writer thread, so the writes queued behind the slow one can only go as one group.
        let test = try TestStore(.postgres, postgresWriterThreads: 1)
        defer { test.close() }
        let groups = { test.store.gauges().first { $0.name == "buzzkit_db_write_groups_total" }?.value ?? -1 }
        let now = Timestamp(millis: 1_800_000_000_000)
        // The start-up purge job is a group of its own: let it pass first.
        for _ in 0..<200 where groups() < 1 { usleep(10_000) }
        let before = groups()
        let done = DispatchGroup()
        let outcomes = Mutex<[Int: Bool]>([:])
        // The first write holds the writer, so the next ten queue up behind it and go as one group.
        done.enter()
        test.store.write({ _ in usleep(300_000) }) { _ in done.leave() }
        usleep(50_000)
        for i in 0..<10 {
            done.enter()
            test.store.write({ ctx in
                try ctx.insertWorkspace(id: "ws_\(i)", name: "w\(i)", now: now)
                if i == 5 { throw Refused() }
            }) { result in
                outcomes.withLock { $0[i] = (try? result.get()) != nil }
                done.leave()
            }
        }
        done.wait()
        let results = outcomes.withLock { $0 }
        #expect(results.filter { !$0.value }.map(\.key) == [5])
        let db = try Connection(url: test.database)
        let stored = try db.query("SELECT id FROM workspaces ORDER BY id").map { try $0.string(0) }
        #expect(stored == (0..<10).filter { $0 != 5 }.map { "ws_\($0)" })
        #expect(groups() - before == 2, "the slow write, then the ten together")
    }
}

import Foundation
import Identity
import SQLite
import Testing

@testable import Storage

/// `SQLiteContext.updateSubscriber` through the store's writer: a save names `id`, `anonymous`
/// and `verified` (and so rewrites their index entries) only when one of them changed.
@Suite struct SubscriberSaveTests {
    @Test func aSaveNamesTheIndexedColumnsOnlyWhenTheyChange() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("save-\(UUID().uuidString).sqlite")
            .path
        let store = try SQLiteIdentityStore(configuration: .init(path: path))
        defer { store.close() }
        let now = Timestamp(millis: 1_800_000_000_000)
        let anon = "anon_" + String(repeating: "s", count: 21)
        // An UPDATE OF trigger fires when the SET names one of its columns, changed or not.
        try store.writer.write { db in
            try db.execute("CREATE TEMP TABLE indexed_saves (key INTEGER)")
            try db.execute(
                """
                CREATE TEMP TRIGGER count_indexed_saves AFTER UPDATE OF id, anonymous, verified ON main.subscribers
                BEGIN INSERT INTO indexed_saves VALUES (new.key); END
                """)
        }
        func indexedSaves() throws -> Int64 {
            try store.writer.write { db in
                defer { try? db.execute("DELETE FROM indexed_saves") }
                return try db.queryOne("SELECT count(*) FROM indexed_saves")?.int(0) ?? -1
            }
        }
        let caller = try store.write { ctx in
            try ctx.insertWorkspace(id: "ws_test", name: "test", now: now)
            let tenant = try Tenancy.createTenant(name: "acme", workspaceID: "ws_test", in: ctx, now: now).tenant
            _ = try Operations.upsert(
                externalID: "user_1", email: nil, attributes: nil, subscribeEmail: nil,
                caller: Caller(tenant: tenant, role: .backend), in: ctx, now: now)
            return Caller(tenant: tenant, role: .app)
        }
        func send(_ ids: [String], to subscriber: String) throws {
            let events = ids.map {
                NewEvent(clientID: $0, name: "open", timestamp: now, receivedAt: now, propertiesJSON: nil)
            }
            _ = try store.write { ctx in
                try Operations.ingest(
                    events, subscriberID: try IDRules.subscriberID(subscriber), caller: caller, in: ctx, now: now)
            }
        }
        try send(["a1"], to: anon)
        _ = try indexedSaves()

        // An events batch changes the counters only.
        try send(["e1", "e2"], to: "user_1")
        #expect(try indexedSaves() == 0)
        let person = try store.read { try $0.subscriber(tenantID: caller.tenant.id, alias: "user_1") }
        #expect(person?.eventCount == 2 && person?.lastSeq == 2)

        // A rename changes the id and `anonymous`: the full save.
        let renamed = try store.write { ctx in
            try Operations.identify(
                IdentifyCommand(externalID: "user_2", anonymousID: anon), caller: caller, in: ctx, now: now)
        }
        #expect(renamed.merge?.shape == .rename)
        #expect(try indexedSaves() == 1)
        let stored = try store.read { try $0.subscriber(key: renamed.subscriber.key) }
        #expect(stored?.id == "user_2" && stored?.anonymous == false && stored?.lastSeq == 2)
    }
}

import Dispatch
import Foundation
import Identity
import JSON
import Synchronization
import TestSupport
import Testing

@testable import PostgresStorage

/// On PostgreSQL a server answers `GET /v1/subscribers/{id}` from its cache only after the
/// database said the cached version is current (migration 0003's triggers, `PostgresSnapshotReader`).
/// Each test caches a snapshot on server B, changes what it shows through server A (a write B
/// never hears of), and reads again on B: the answer must show the change.
@Suite(.enabled(if: PostgresTestDatabase.isAvailable, "BUZZKIT_TEST_POSTGRES_URL is not set"))
struct PostgresSnapshotCheckTests {
    let now = Timestamp(millis: 1_800_000_000_000)

    /// Two servers on one database, a tenant, and subscribers "alice" and "bob".
    func withTwoServers(
        _ body: (_ a: any IdentityStore, _ b: PostgresIdentityStore, _ tenant: String, _ keys: [String: Int64]) throws
            -> Void
    ) throws {
        let first = try TestStore(.postgres)
        defer { first.close() }
        let second = try TestStore(sharing: first)
        defer { second.store.close() }
        let b = try #require(second.store as? PostgresIdentityStore)
        let now = self.now
        let (tenant, keys) = try first.store.writeAndWait { ctx -> (String, [String: Int64]) in
            try ctx.insertWorkspace(id: "ws_test", name: "test", now: now)
            let tenant = try Tenancy.createTenant(name: "acme", workspaceID: "ws_test", in: ctx, now: now).tenant
            var keys: [String: Int64] = [:]
            for id in ["alice", "bob"] {
                keys[id] = try ctx.insertSubscriber(tenantID: tenant.id, id: id, anonymous: false, now: now).key
            }
            return (tenant.id, keys)
        }
        try body(first.store, b, tenant, keys)
    }

    /// Reads `id` on B twice, so the second answer came from B's cache after the check.
    func cachedOnB(_ b: PostgresIdentityStore, _ tenant: String, _ id: String) throws -> SubscriberSnapshot {
        _ = try b.snapshot(tenantID: tenant, id: id)
        let hitsBefore = b.snapshotCacheHits
        let snapshot = try #require(try b.snapshot(tenantID: tenant, id: id))
        #expect(b.snapshotCacheHits == hitsBefore + 1, "the second read is a checked cache hit")
        return snapshot
    }

    @Test func aChangeToEachChildTableIsSeenOnTheOtherServer() throws {
        try withTwoServers { a, b, tenant, keys in
            let alice = keys["alice"]!
            let now = self.now

            _ = try cachedOnB(b, tenant, "alice")
            try a.writeAndWait { ctx in
                try ctx.writeAttributes(
                    key: alice, [("plan", AttributeEntry(value: .string("pro"), setByBackend: true))])
            }
            #expect(try b.snapshot(tenantID: tenant, id: "alice")?.attributes.map(\.name) == ["plan"])

            _ = try cachedOnB(b, tenant, "alice")
            try a.writeAndWait { ctx in
                try ctx.upsertPushSubscription(
                    tenantID: tenant, key: alice, deviceID: "dev_1", token: "tok_1", platform: "ios", now: now)
            }
            #expect(try b.snapshot(tenantID: tenant, id: "alice")?.pushSubscriptions.map(\.token) == ["tok_1"])

            _ = try cachedOnB(b, tenant, "alice")
            try a.writeAndWait { ctx in
                try ctx.writePreference(key: alice, PreferenceRecord(topic: "news", subscribed: true, updatedAt: now))
            }
            #expect(try b.snapshot(tenantID: tenant, id: "alice")?.preferences.map(\.topic) == ["news"])

            _ = try cachedOnB(b, tenant, "alice")
            try a.writeAndWait { ctx in
                try ctx.upsertDevice(key: alice, DeviceRecord(deviceID: "dev_1", model: "iPhone", lastSeenAt: now))
            }
            #expect(try b.snapshot(tenantID: tenant, id: "alice")?.devices.map(\.model) == ["iPhone"])

            _ = try cachedOnB(b, tenant, "alice")
            try a.writeAndWait { ctx in
                try ctx.addAlias(tenantID: tenant, alias: "anon_aliceAliceAlice12345", key: alice)
            }
            #expect(try b.snapshot(tenantID: tenant, id: "alice")?.aliases == ["anon_aliceAliceAlice12345"])

            // Removing a child is a change too.
            _ = try cachedOnB(b, tenant, "alice")
            try a.writeAndWait { ctx in try ctx.writeAttributes(key: alice, [("plan", nil)]) }
            #expect(try b.snapshot(tenantID: tenant, id: "alice")?.attributes.isEmpty == true)
        }
    }

    @Test func aTokenTakenByAnotherSubscriberLeavesTheFirstOnBothServers() throws {
        try withTwoServers { a, b, tenant, keys in
            let now = self.now
            try a.writeAndWait { ctx in
                try ctx.upsertPushSubscription(
                    tenantID: tenant, key: keys["alice"]!, deviceID: "dev_1", token: "tok_1", platform: "ios",
                    now: now)
            }
            #expect(try cachedOnB(b, tenant, "alice").pushSubscriptions.count == 1)
            // Bob's registration deletes Alice's row: a write to Bob that changes Alice's snapshot.
            try a.writeAndWait { ctx in
                try ctx.upsertPushSubscription(
                    tenantID: tenant, key: keys["bob"]!, deviceID: "dev_1", token: "tok_1", platform: "ios", now: now)
            }
            #expect(try b.snapshot(tenantID: tenant, id: "alice")?.pushSubscriptions.isEmpty == true)
            #expect(try b.snapshot(tenantID: tenant, id: "bob")?.pushSubscriptions.map(\.token) == ["tok_1"])
        }
    }

    @Test func anAliasMovedByAMergeReachesTheSurvivorOnTheOtherServer() throws {
        try withTwoServers { a, b, tenant, keys in
            let (alice, bob) = (keys["alice"]!, keys["bob"]!)
            #expect(try cachedOnB(b, tenant, "bob").record.key == bob)
            try a.writeAndWait { ctx in
                try ctx.reassignAliases(from: bob, to: alice)
                try ctx.retireSubscriber(key: bob)
            }
            let moved = try #require(try b.snapshot(tenantID: tenant, id: "bob"))
            #expect(moved.record.key == alice)
            #expect(moved.aliases == ["bob"])
            // A change to the row itself (no child table) is seen too.
            #expect(try cachedOnB(b, tenant, "alice").record.email == nil)
            try a.writeAndWait { ctx in
                var record = try ctx.subscriber(key: alice)!
                record.email = "alice@example.com"
                try ctx.updateSubscriber(record)
            }
            #expect(try b.snapshot(tenantID: tenant, id: "alice")?.record.email == "alice@example.com")
        }
    }

    /// A held snapshot is checked by its subscriber's key; the asked id's alias row is not read
    /// again. What keeps that sound is the triggers: moving an alias renews its old owner's
    /// version. Here nothing else writes to the old owner, so only the trigger can tell B.
    @Test func anAliasMovedAloneReachesItsNewOwnerOnTheOtherServer() throws {
        try withTwoServers { a, b, tenant, keys in
            let (alice, bob) = (keys["alice"]!, keys["bob"]!)
            let device = "anon_bobBobBobBobBob123456"
            try a.writeAndWait { ctx in try ctx.addAlias(tenantID: tenant, alias: device, key: bob) }
            #expect(try cachedOnB(b, tenant, device).record.key == bob)
            try a.writeAndWait { ctx in try ctx.reassignAliases(from: bob, to: alice) }
            let moved = try #require(try b.snapshot(tenantID: tenant, id: device))
            #expect(moved.record.key == alice)
            #expect(moved.aliases.sorted() == ["bob", device].sorted())
        }
    }

    /// A held snapshot whose subscriber is gone: the check by key finds no row, and the read of
    /// the id that follows finds no one either.
    @Test func aSubscriberDeletedOnOneServerIsGoneOnTheOther() throws {
        try withTwoServers { a, b, tenant, keys in
            _ = try cachedOnB(b, tenant, "bob")
            try a.writeAndWait { ctx in try ctx.deleteSubscriber(key: keys["bob"]!) }
            #expect(try b.snapshot(tenantID: tenant, id: "bob") == nil)
            #expect(try b.snapshot(tenantID: tenant, id: "alice")?.record.key == keys["alice"])
        }
    }

    /// Many readers at once share statements, and each gets its own subscriber.
    @Test func concurrentReadsShareBatchesAndEachGetsItsOwnAnswer() throws {
        try withTwoServers { a, b, tenant, _ in
            let ids = (0..<40).map { "user_\($0)" }
            let now = self.now
            try a.writeAndWait { ctx in
                for id in ids {
                    _ = try ctx.insertSubscriber(tenantID: tenant, id: id, anonymous: false, now: now)
                }
            }
            let wrong = Atomic<Int>(0)
            let (batchesBefore, readsBefore) = (b.snapshotBatches, b.snapshotReads)
            // Threads of our own: more readers than cores, as the API's read threads are.
            let group = DispatchGroup()
            for thread in 0..<20 {
                group.enter()
                Thread.detachNewThread {
                    for round in 0..<50 {
                        let id = ids[(thread + round) % ids.count]
                        if (try? b.snapshot(tenantID: tenant, id: id))??.record.id != id {
                            wrong.add(1, ordering: .relaxed)
                        }
                    }
                    group.leave()
                }
            }
            group.wait()
            #expect(wrong.load(ordering: .relaxed) == 0)
            let (batches, reads) = (b.snapshotBatches - batchesBefore, b.snapshotReads - readsBefore)
            #expect(reads == 1000)
            #expect(batches < reads, "\(batches) statements for \(reads) reads")
            // An id that reaches no one is nil, in a batch with others or alone.
            #expect(try b.snapshot(tenantID: tenant, id: "nobody") == nil)
            #expect(try b.snapshot(tenantID: "ten_other", id: "user_1") == nil)
        }
    }
}

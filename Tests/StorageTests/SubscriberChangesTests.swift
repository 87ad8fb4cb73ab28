import Identity
import SQLite
import Testing

@testable import Storage

/// The writer's temp triggers tell the snapshot cache which subscribers a statement changed: a
/// row's owner on insert, update and delete, and on an update that moves the row to another
/// subscriber, the old owner as well (its cached snapshot still shows the row).
struct SubscriberChangesTests {
    private let now = Timestamp(millis: 1_700_000_000_000)

    @Test func anUpdateReportsTheOldOwnerOnlyWhenTheRowMoves() throws {
        let t = try TenantDatabase(prefix: "subscriber-changes", now: now)
        let changes = SubscriberChanges()
        try t.db.createIntegerObserver(SubscriberChanges.functionName) { changes.record($0) }
        try t.db.execute(SubscriberChanges.triggersSQL)
        let a = try t.ctx.insertSubscriber(tenantID: t.tenant.id, id: "user-a", anonymous: false, now: now)
        let b = try t.ctx.insertSubscriber(tenantID: t.tenant.id, id: "user-b", anonymous: false, now: now)
        try t.ctx.upsertPushSubscription(
            tenantID: t.tenant.id, key: a.key, deviceID: "phone", token: "tok", platform: "ios", now: now)
        #expect(changes.take() == [a.key, b.key])

        // The subscriber's own row, its key unchanged: itself, once.
        var renamed = a
        renamed.id = "user-a2"
        try t.ctx.updateSubscriber(renamed)
        #expect(changes.take() == [a.key])

        // A push subscription moved by an UPDATE alone (no device row to delete): both owners.
        try t.ctx.movePushSubscriptions(from: a.key, to: b.key)
        #expect(changes.take() == [a.key, b.key])

        // An alias moved the same way.
        try t.ctx.addAlias(tenantID: t.tenant.id, alias: "anon_a", key: a.key)
        _ = changes.take()
        try t.db.execute("UPDATE aliases SET subscriber_key = ? WHERE alias = 'anon_a'", [b.key])
        #expect(changes.take() == [a.key, b.key])
    }
}

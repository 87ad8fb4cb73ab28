import Identity
import JSON
import SQLite
import Testing

@testable import Storage

/// `SQLiteContext.snapshotIfCheap`: a write's answer is read on the writer for a small person,
/// exactly as a reader would read it, and left to a reader once any part of the person is big.
@Suite struct WriterSnapshotTests {
    let now = Timestamp(millis: 1_800_000_000_000)
    let limit = SQLiteContext.writerSnapshotPartLimit

    /// A person with `limit` rows in each part of its snapshot (its own id among the aliases).
    private func person(_ database: TenantDatabase) throws -> SubscriberRecord {
        try TenantDatabase.makeSubscriber(
            "p", children: limit, aliases: limit - 1, in: database.ctx, tenantID: database.tenant.id, now: now)
    }

    @Test func aPersonAtTheLimitIsReadOnTheWriterAsAReaderWouldReadIt() throws {
        let database = try TenantDatabase(prefix: "writer-snapshot", now: now)
        let record = try person(database)
        let onWriter = try #require(try database.ctx.snapshotIfCheap(of: record))
        let byReader = try SubscriberSnapshot.load(record, from: database.ctx)
        #expect(onWriter.sameContent(as: byReader))
        #expect(onWriter.aliases.count == limit - 1)
        #expect(onWriter.devices.count == limit)
    }

    /// A reader's snapshot (an uncached GET) is the same one statement for a person of any size,
    /// each part in the order of its own read: bytewise, and newest first with ties by device id.
    @Test func aBigPersonIsReadInOneStatementInEachPartsOrder() throws {
        let database = try TenantDatabase(prefix: "writer-snapshot", now: now)
        let record = try TenantDatabase.makeSubscriber(
            "big", children: 3 * limit, in: database.ctx, tenantID: database.tenant.id, now: now)
        let ctx = database.ctx
        for topic in ["\u{e9}t\u{e9}", "Zebra", "zebra", "e\u{301}t\u{e9}"] {
            try ctx.writePreference(key: record.key, PreferenceRecord(topic: topic, subscribed: true, updatedAt: now))
        }
        let before = database.db.cachedStatementRuns
        let together = try ctx.snapshot(of: record)
        #expect(database.db.cachedStatementRuns - before == 1)
        let partByPart = try SubscriberSnapshot.load(record, from: ctx)
        #expect(together.sameContent(as: partByPart))
        #expect(together.attributes.count == 3 * limit && together.preferences.count == 3 * limit + 4)
        #expect(together.attributes.prefix(3).map(\.name) == ["k0", "k1", "k10"], "bytewise, not by insertion")
        #expect(together.preferences.suffix(2).map(\.topic) == ["zebra", "\u{e9}t\u{e9}"], "UTF-8 bytes order")
    }

    @Test(arguments: ["aliases", "attributes", "push_subscriptions", "preferences", "devices"])
    func onePartPastTheLimitLeavesTheReadToAReader(part: String) throws {
        let database = try TenantDatabase(prefix: "writer-snapshot", now: now)
        let record = try person(database)
        let ctx = database.ctx
        switch part {
        case "aliases": try ctx.addAlias(tenantID: database.tenant.id, alias: "anon-x", key: record.key)
        case "attributes":
            try ctx.writeAttributes(key: record.key, [("x", AttributeEntry(value: .bool(true), setByBackend: false))])
        case "push_subscriptions":
            try ctx.upsertPushSubscription(
                tenantID: database.tenant.id, key: record.key, deviceID: "dx", token: "tx", platform: "ios", now: now)
        case "preferences":
            try ctx.writePreference(key: record.key, PreferenceRecord(topic: "x", subscribed: true, updatedAt: now))
        default: try ctx.upsertDevice(key: record.key, DeviceRecord(deviceID: "dx", lastSeenAt: now))
        }
        #expect(try ctx.snapshotIfCheap(of: record) == nil, "\(part) has \(limit + 1) rows")
    }
}

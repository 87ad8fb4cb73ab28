import Identity
import JSON
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

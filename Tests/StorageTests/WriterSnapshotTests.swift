import Identity
import JSON
import Testing

@testable import Storage

/// `SQLiteContext.snapshotIfCheap`: a write's answer is read on the writer for a small person,
/// exactly as a reader would read it, and left to a reader once any part of the person is big.
@Suite struct WriterSnapshotTests {
    let now = Timestamp(millis: 1_800_000_000_000)
    let limit = SQLiteContext.writerSnapshotPartLimit

    /// A person with `count` rows in each part of its snapshot (its own id among the aliases).
    private func person(_ database: TenantDatabase, rows count: Int) throws -> SubscriberRecord {
        let ctx = database.ctx
        let record = try ctx.insertSubscriber(tenantID: database.tenant.id, id: "p", anonymous: false, now: now)
        for i in 1..<count { try ctx.addAlias(tenantID: database.tenant.id, alias: "anon-\(i)", key: record.key) }
        try ctx.writeAttributes(
            key: record.key,
            (0..<count).map { ("a\($0)", AttributeEntry(value: .number(String($0)), setByBackend: $0 % 2 == 0)) })
        for i in 0..<count {
            try ctx.upsertPushSubscription(
                tenantID: database.tenant.id, key: record.key, deviceID: "d\(i)", token: "t\(i)", platform: "ios",
                now: Timestamp(millis: now.millis + Int64(i)))
            try ctx.writePreference(
                key: record.key, PreferenceRecord(topic: "topic\(i)", subscribed: i % 2 == 0, updatedAt: now))
            try ctx.upsertDevice(
                key: record.key,
                DeviceRecord(deviceID: "d\(i)", platform: "ios", lastSeenAt: Timestamp(millis: now.millis + Int64(i))))
        }
        return record
    }

    private func same(_ a: SubscriberSnapshot, _ b: SubscriberSnapshot) -> Bool {
        a.record == b.record && a.aliases == b.aliases && a.pushSubscriptions == b.pushSubscriptions
            && a.preferences == b.preferences && a.devices == b.devices
            && a.attributes.map(\.name) == b.attributes.map(\.name)
            && a.attributes.map(\.entry) == b.attributes.map(\.entry)
    }

    @Test func aPersonAtTheLimitIsReadOnTheWriterAsAReaderWouldReadIt() throws {
        let database = try TenantDatabase(prefix: "writer-snapshot", now: now)
        let record = try person(database, rows: limit)
        let onWriter = try #require(try database.ctx.snapshotIfCheap(of: record))
        let byReader = try SubscriberSnapshot.load(record, from: database.ctx)
        #expect(same(onWriter, byReader))
        #expect(onWriter.aliases.count == limit - 1)
        #expect(onWriter.devices.count == limit)
    }

    @Test(arguments: ["aliases", "attributes", "push_subscriptions", "preferences", "devices"])
    func onePartPastTheLimitLeavesTheReadToAReader(part: String) throws {
        let database = try TenantDatabase(prefix: "writer-snapshot", now: now)
        let record = try person(database, rows: limit)
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

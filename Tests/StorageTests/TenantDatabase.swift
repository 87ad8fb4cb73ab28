import Foundation
import Identity
import JSON
import SQLite

@testable import Storage

/// A freshly migrated SQLite file holding one workspace and one tenant, for suites that drive
/// `SQLiteContext` directly.
struct TenantDatabase {
    let db: Database
    let ctx: SQLiteContext
    let tenant: TenantRecord

    init(prefix: String, now: Timestamp) throws {
        let path = FileManager.default.temporaryDirectory
            .appendingPathComponent("\(prefix)-\(UUID().uuidString).sqlite").path
        db = try Database(path: path)
        _ = try Migrator(migrations: try SQLiteIdentityStore.bundledMigrations()).migrate(db)
        ctx = SQLiteContext(db: db)
        try ctx.insertWorkspace(id: "ws_test", name: "test", now: now)
        tenant = try Tenancy.createTenant(name: "acme", workspaceID: "ws_test", in: ctx, now: now).tenant
    }
}

extension TenantDatabase {
    /// A subscriber with something in every child table: `n` rows of each, and `aliases` ids
    /// besides its own (`n` unless given).
    static func makeSubscriber(
        _ id: String, children n: Int, aliases: Int? = nil, in ctx: SQLiteContext, tenantID: String, now: Timestamp
    ) throws -> SubscriberRecord {
        let record = try ctx.insertSubscriber(tenantID: tenantID, id: id, anonymous: false, now: now)
        for i in 0..<(aliases ?? n) {
            try ctx.addAlias(tenantID: tenantID, alias: "anon_\(id)_\(i)", key: record.key)
        }
        for i in 0..<n {
            try ctx.writeAttributes(
                key: record.key, [("k\(i)", AttributeEntry(value: .number(String(i)), setByBackend: i % 2 == 0))])
            try ctx.upsertPushSubscription(
                tenantID: tenantID, key: record.key, deviceID: "\(id)-dev\(i)", token: "\(id)-tok\(i)",
                platform: "ios", now: Timestamp(millis: now.millis + Int64(i)))
            try ctx.writePreference(
                key: record.key, PreferenceRecord(topic: "t\(i)", subscribed: i % 2 == 0, updatedAt: now))
            try ctx.upsertDevice(
                key: record.key,
                DeviceRecord(deviceID: "\(id)-dev\(i)", model: i % 2 == 0 ? "x" : nil, lastSeenAt: now))
        }
        return record
    }
}

extension SubscriberSnapshot {
    /// Field by field (a snapshot is an object without `==`; attribute pairs are tuples).
    func sameContent(as other: SubscriberSnapshot) -> Bool {
        record == other.record && aliases == other.aliases && pushSubscriptions == other.pushSubscriptions
            && preferences == other.preferences && devices == other.devices
            && attributes.map(\.name) == other.attributes.map(\.name)
            && attributes.map(\.entry) == other.attributes.map(\.entry)
    }
}

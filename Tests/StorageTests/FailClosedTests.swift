import Foundation
import Identity
import JSON
import Migrations
import SQLite
import Synchronization
import Testing

@testable import Storage

/// Rows that do not hold what the schema says are errors, never defaults (STYLE.md, "Failing
/// closed"); and a page of snapshots is a few statements, not a few per subscriber.
@Suite struct FailClosedTests {
    let db: Database
    let ctx: SQLiteContext
    let tenant: TenantRecord
    let now = Timestamp(millis: 1_800_000_000_000)

    init() throws {
        let fixture = try TenantDatabase(prefix: "closed", now: now)
        (db, ctx, tenant) = (fixture.db, fixture.ctx, fixture.tenant)
    }

    private func makeSubscriber(_ id: String, children n: Int) throws -> SubscriberRecord {
        try TenantDatabase.makeSubscriber(id, children: n, in: ctx, tenantID: tenant.id, now: now)
    }

    @Test func aPageOfSnapshotsIsFiveStatementsWhateverItsSize() throws {
        var records: [SubscriberRecord] = []
        for i in 0..<30 { records.append(try makeSubscriber("user\(i)", children: i % 4)) }
        let batched = try ctx.snapshots(of: records)
        #expect(batched.count == 30)
        for (snapshot, record) in zip(batched, records) {
            #expect(snapshot.sameContent(as: try SubscriberSnapshot.load(record, from: ctx)), "\(record.id)")
        }
        func runs(_ page: [SubscriberRecord]) throws -> Int {
            let before = db.cachedStatementRuns
            _ = try ctx.snapshots(of: page)
            return db.cachedStatementRuns - before
        }
        #expect(try runs(Array(records.prefix(3))) == 5)  // one a child table: attributes … devices
        #expect(try runs(records) == 5)
    }

    @Test func aSubscriberColumnOfTheWrongTypeThrowsNamingIt() throws {
        let record = try makeSubscriber("ada", children: 1)
        #expect(try ctx.subscriber(key: record.key) != nil)
        try db.execute("UPDATE subscribers SET verified = 'yes' WHERE key = ?", [record.key])
        do {
            _ = try ctx.subscriber(key: record.key)
            Issue.record("a TEXT verified was read")
        } catch let error as RowDecodingError {
            #expect(error.column == "verified" && error.found == "TEXT")
            #expect(!error.description.contains("yes"), "values stay out of errors")
        }
        try db.execute("UPDATE subscribers SET verified = 2 WHERE key = ?", [record.key])
        #expect(throws: RowDecodingError.self) { try ctx.subscriber(tenantID: tenant.id, alias: "ada") }
        #expect(throws: RowDecodingError.self) {
            try ctx.listSubscribers(tenantID: tenant.id, afterKey: 0, limit: 10, anonymous: nil, verified: nil)
        }
    }

    @Test func anAttributeThatDoesNotParseIsAnErrorNotAMissingKey() throws {
        let record = try makeSubscriber("ada", children: 2)
        try db.execute("UPDATE attributes SET value = '{nope' WHERE subscriber_key = ? AND name = 'k1'", [record.key])
        #expect(throws: RowDecodingError.self) { try ctx.attributes(key: record.key) }
        #expect(throws: RowDecodingError.self) { try ctx.snapshots(of: [record]) }
    }

    @Test func aDeviceOrSubscriptionWithANullWhereOneIsRequiredThrows() throws {
        let record = try makeSubscriber("ada", children: 1)
        // The schema says NOT NULL; a damaged or hand-edited file may still hold other types.
        try db.execute("UPDATE devices SET last_seen_at = 'yesterday' WHERE subscriber_key = ?", [record.key])
        #expect(throws: RowDecodingError.self) { try ctx.devices(key: record.key) }
        try db.execute("UPDATE push_subscriptions SET created_at = 1.5 WHERE subscriber_key = ?", [record.key])
        #expect(throws: RowDecodingError.self) { try ctx.pushSubscriptions(key: record.key) }
    }

    @Test func aCorruptSecuritySettingFailsClosed() throws {
        try db.execute(
            "UPDATE tenants SET settings = ? WHERE id = ?",
            [#"{"requireVerification":"yes","allowAnonymous":false}"#, tenant.id])
        #expect(throws: TenantSettings.DecodingError.self) { try ctx.tenant(id: tenant.id) }
        try db.execute("UPDATE tenants SET settings = 'not json' WHERE id = ?", [tenant.id])
        #expect(throws: RowDecodingError.self) { try ctx.tenant(id: tenant.id) }
    }

    @Test func aSettingsRowKeepsWhatItCanReadAndReportsTheRest() throws {
        try db.execute(
            "UPDATE tenants SET settings = ? WHERE id = ?",
            [
                #"{"requireVerification":true,"protectedAttributes":["plan"],"fromANewerBinary":1,"#
                    + #""attributeLimits":{"maxKeys":"many","maxValueBytes":2048},"maxAliases":50}"#,
                tenant.id,
            ])
        let reported = Mutex<[String]>([])
        var reading = ctx
        reading.onSkipped = { operation, error in reported.withLock { $0.append("\(operation): \(error)") } }
        let settings = try #require(try reading.tenant(id: tenant.id)).settings
        #expect(settings.requireVerification)
        #expect(settings.protectedAttributes == ["plan"])
        #expect(settings.attributeLimits.maxValueBytes == 2048)
        #expect(settings.attributeLimits.maxKeys == AttributeLimits().maxKeys)
        #expect(settings.maxAliases == 50)
        let lines = reported.withLock { $0 }.sorted()
        #expect(lines.count == 2, "\(lines)")
        #expect(lines.allSatisfy { $0.hasPrefix("tenant settings: ") && $0.contains(tenant.id) })
        #expect(lines.contains { $0.contains("attributeLimits.maxKeys") })
        #expect(lines.contains { $0.contains("fromANewerBinary") })
    }
}

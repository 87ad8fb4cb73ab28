import Foundation
import Identity
import Migrations
import Postgres
import PostgresStorage
import SQLite
import Storage
import TestSupport
import Testing

/// Migration 0004 folds `webhook_events` into `webhook_deliveries` (one row per event and
/// endpoint). A database written before it keeps its history, and an attempt still pending is
/// sent after the upgrade with the body it was first rendered with, byte for byte, retries too.
@Suite struct OutboxUpgradeTests {
    /// What a server before 0004 had written: an event, its failed first attempt and the pending
    /// retry. The same SQL runs on both engines.
    static let before0004 = """
        INSERT INTO workspaces (id, name, created_at) VALUES ('ws_up', 'up', 1);
        INSERT INTO tenants (id, workspace_id, name, settings, identity_secret, created_at)
            VALUES ('ten_up', 'ws_up', 'up', '{}', 'secret', 1);
        INSERT INTO webhook_endpoints (id, tenant_id, url, events, secret, enabled, created_at)
            VALUES ('whk_up', 'ten_up', 'http://127.0.0.1:9/hook', '*', 'whsec_c2VjcmV0', TRUE, 1);
        INSERT INTO webhook_events (id, tenant_id, type, body, created_at)
            VALUES ('evt_old', 'ten_up', 'subscriber.created', '{ "rendered": "before 0004" }', 1000);
        INSERT INTO webhook_deliveries (endpoint_key, event_id, attempt, status, response_status, error, created_at,
                                        next_attempt_at)
            SELECT key, 'evt_old', 1, 'failed', 500, 'HTTP 500', 2000, 7000 FROM webhook_endpoints;
        INSERT INTO webhook_deliveries (endpoint_key, event_id, attempt, status, created_at, next_attempt_at)
            SELECT key, 'evt_old', 2, 'pending', 2000, 7000 FROM webhook_endpoints;
        """
    static let oldBody = #"{ "rendered": "before 0004" }"#

    @Test func sqlitePendingDeliveriesSurviveTheUpgrade() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("outbox-up-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("db.sqlite").path
        do {
            let db = try Database(path: path)
            let older = try SQLiteIdentityStore.bundledMigrations().filter { $0.identifier < "0004" }
            _ = try SQLite.Migrator(migrations: older).migrate(db)
            try db.execute(Self.before0004)
        }
        let store = try SQLiteIdentityStore(configuration: .init(path: path))
        defer { store.close() }
        try checkAfterUpgrade(store)
        // The events table went with the migration.
        let db = try Database(path: path)
        #expect(try db.queryOne("SELECT count(*) FROM sqlite_master WHERE name = 'webhook_events'")?.int(0) == 0)
    }

    @Test(.enabled(if: PostgresTestDatabase.isAvailable, "needs BUZZKIT_TEST_POSTGRES_URL"))
    func postgresPendingDeliveriesSurviveTheUpgrade() throws {
        let database = try #require(try PostgresTestDatabase.make())
        defer { database.drop() }
        do {
            let connection = try Connection(url: database.url)
            defer { connection.close() }
            let older = try PostgresIdentityStore.bundledMigrations().filter { $0.identifier < "0004" }
            _ = try Postgres.Migrator(migrations: older).migrate(connection)
            try connection.execute(Self.before0004)
        }
        let store = try PostgresIdentityStore(configuration: .init(url: database.url))
        defer { store.close() }
        try checkAfterUpgrade(store)
    }

    private func checkAfterUpgrade(_ store: any IdentityStore) throws {
        // The history lists as before, its type now from the delivery row.
        let endpoint = try #require(try store.read { try $0.webhookEndpoint(tenantID: "ten_up", id: "whk_up") })
        let listed = try store.read { try $0.webhookDeliveries(endpointKey: endpoint.key, beforeKey: nil, limit: 10) }
        #expect(listed.map(\.attempt) == [2, 1])
        #expect(listed.map(\.status) == ["pending", "failed"])
        #expect(listed.allSatisfy { $0.type == "subscriber.created" && $0.eventID == "evt_old" })

        func claim(at millis: Int64) throws -> [DueWebhookDelivery] {
            try store.writeAndWait {
                try $0.claimDueWebhookDeliveries(
                    now: Timestamp(millis: millis), limit: 10, leaseUntil: Timestamp(millis: millis + 60_000))
            }
        }
        let due = try claim(at: 7000)
        #expect(due.map(\.eventID) == ["evt_old"])
        #expect(due.map(\.body) == [Self.oldBody])
        #expect(due.map(\.attempt) == [2])
        // It fails again: the retry it queues carries the same old body.
        let key = try #require(due.first).key
        try store.writeAndWait {
            try $0.completeWebhookDelivery(
                key: key, succeeded: false, responseStatus: 503, error: "HTTP 503", now: Timestamp(millis: 8000),
                retryAt: Timestamp(millis: 9000))
        }
        let retry = try claim(at: 9000)
        #expect(retry.map(\.body) == [Self.oldBody])
        #expect(retry.map(\.attempt) == [3])
        #expect(try store.read { try $0.pendingWebhookDeliveryCount() } == 1)
    }
}

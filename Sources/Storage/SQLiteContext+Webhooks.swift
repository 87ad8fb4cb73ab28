import Identity
import SQLite
import Synchronization

/// A stored row of the webhook or idempotency tables that does not decode: failing closed
/// rather than sending to a default URL or replaying an empty answer.
struct UndecodableRowError: Error, CustomStringConvertible {
    var table: String
    var column: String
    var description: String { "\(table).\(column) does not decode" }
}

func required<T>(_ value: T?, _ table: String, _ column: String) throws -> T {
    guard let value else { throw UndecodableRowError(table: table, column: column) }
    return value
}

// MARK: - Idempotency records (API.md §13)

extension SQLiteContext {
    func idempotencyRecord(scope: String, key: String) throws -> IdempotencyRecord? {
        guard
            let row = try db.queryOne(
                """
                SELECT method, path, body_sha256, status, content_type, response, created_at
                FROM idempotency_records WHERE scope = ? AND key = ?
                """, [scope, key])
        else { return nil }
        let table = "idempotency_records"
        return IdempotencyRecord(
            scope: scope, key: key, method: try required(row.string(0), table, "method"),
            path: try required(row.string(1), table, "path"),
            bodySHA256: try required(row.blob(2), table, "body_sha256"),
            status: Int(try required(row.int(3), table, "status")),
            contentType: try required(row.string(4), table, "content_type"),
            // An empty blob reads back as NULL-free zero bytes; the column is never NULL.
            response: row.blob(5) ?? [], createdAt: Timestamp(millis: try required(row.int(6), table, "created_at")))
    }

    func insertIdempotencyRecord(_ r: IdempotencyRecord) throws {
        try db.execute(
            """
            INSERT INTO idempotency_records (scope, key, method, path, body_sha256, status, content_type, response,
                                             created_at)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
            """,
            [r.scope, r.key, r.method, r.path, r.bodySHA256, r.status, r.contentType, r.response, r.createdAt.millis])
    }

    func idempotencyRecordsExist(createdBefore cutoff: Timestamp) throws -> Bool {
        try db.queryOne(
            "SELECT EXISTS (SELECT 1 FROM idempotency_records WHERE created_at < ?)", [cutoff.millis])?.int(0) == 1
    }

    func purgeIdempotencyRecords(createdBefore cutoff: Timestamp, limit: Int) throws -> Int {
        try db.execute(
            """
            DELETE FROM idempotency_records WHERE (scope, key) IN (
                SELECT scope, key FROM idempotency_records WHERE created_at < ? ORDER BY created_at LIMIT ?)
            """, [cutoff.millis, limit])
        return db.changes
    }
}

// MARK: - Webhook endpoints, events and deliveries (API.md §14)

extension SQLiteContext {
    private static let endpointColumns =
        "key, id, tenant_id, url, events, description, secret, enabled, created_at"

    private static func endpoint(_ row: Row) throws -> WebhookEndpointRecord {
        let table = "webhook_endpoints"
        let events = try required(row.string(4), table, "events")
        return WebhookEndpointRecord(
            key: try required(row.int(0), table, "key"), id: try required(row.string(1), table, "id"),
            tenantID: try required(row.string(2), table, "tenant_id"), url: try required(row.string(3), table, "url"),
            events: WebhookEndpointRecord.events(stored: events), description: row.string(5),
            secret: try required(row.string(6), table, "secret"),
            enabled: try required(row.bool(7), table, "enabled"),
            createdAt: Timestamp(millis: try required(row.int(8), table, "created_at")))
    }

    func webhookEndpoints(tenantID: String, afterKey: Int64, limit: Int) throws -> [WebhookEndpointRecord] {
        try db.query(
            "SELECT \(Self.endpointColumns) FROM webhook_endpoints WHERE tenant_id = ? AND key > ? ORDER BY key LIMIT ?",
            [tenantID, afterKey, limit]
        ).map(Self.endpoint)
    }

    func webhookEndpoint(tenantID: String, id: String) throws -> WebhookEndpointRecord? {
        try db.queryOne(
            "SELECT \(Self.endpointColumns) FROM webhook_endpoints WHERE tenant_id = ? AND id = ?", [tenantID, id]
        ).map(Self.endpoint)
    }

    func webhookWanted(tenantID: String, type: String) throws -> Bool {
        if let endpoints = try cachedWebhookEndpoints(tenantID: tenantID) {
            return endpoints.contains { $0.wants(type) }
        }
        return try db.queryOne(
            """
            SELECT 1 FROM webhook_endpoints WHERE tenant_id = ?1 AND enabled = 1
                AND (events = '*' OR instr(events, ',' || ?2 || ',') > 0) LIMIT 1
            """, [tenantID, type]) != nil
    }

    /// The tenant's enabled endpoints from the writer's cache (filled from SQL on a miss), or nil
    /// when there is no cache or an endpoint changed in the running group.
    func cachedWebhookEndpoints(tenantID: String) throws -> [WebhookFilterCache.Endpoint]? {
        guard let cache = webhookFilters, !cache.isDirty else { return nil }
        if let cached = cache.endpoints(tenantID: tenantID) { return cached }
        let endpoints = try db.rows(
            "SELECT key, events FROM webhook_endpoints WHERE tenant_id = ? AND enabled = 1", [tenantID]
        ) { row in
            WebhookFilterCache.Endpoint(
                key: try required(row.int(at: 0), "webhook_endpoints", "key"),
                types: WebhookEndpointRecord.events(
                    stored: try required(row.string(at: 1), "webhook_endpoints", "events")
                ).map(Set.init))
        }
        cache.store(endpoints, tenantID: tenantID)
        return endpoints
    }

    func pushSubscriptionHolders(tenantID: String, deviceID: String, token: String) throws -> [Int64] {
        try db.rows(
            """
            SELECT DISTINCT subscriber_key FROM push_subscriptions
            WHERE tenant_id = ?1 AND (device_id = ?2 OR token = ?3)
            """, [tenantID, deviceID, token]
        ) { $0.int(at: 0) }
    }

    func insertWebhookEndpoint(_ e: WebhookEndpointRecord) throws -> Int64 {
        try db.execute(
            """
            INSERT INTO webhook_endpoints (id, tenant_id, url, events, description, secret, enabled, created_at)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?)
            """,
            [
                e.id, e.tenantID, e.url, e.storedEvents, e.description, e.secret, e.enabled,
                e.createdAt.millis,
            ])
        webhookFilters?.endpointsChanged()
        return db.lastInsertRowID
    }

    func deleteWebhookEndpoint(key: Int64) throws {
        // Its deliveries, which carry their events, go by ON DELETE CASCADE; its waiting events
        // here. Events of the running group are dropped when it writes its outbox rows.
        try db.execute("DELETE FROM webhook_outbox WHERE endpoint_key = ?", [key])
        try db.execute("DELETE FROM webhook_endpoints WHERE key = ?", [key])
        webhookFilters?.endpointsChanged()
    }

    func disabledEndpointsHavePending() throws -> Bool {
        // From the pending side (the partial due index): few rows, where a disabled endpoint's
        // history may be long. Waiting outbox events count as pending too.
        try db.queryOne(
            """
            SELECT EXISTS (
                    SELECT 1 FROM webhook_deliveries AS d JOIN webhook_endpoints AS w ON w.key = d.endpoint_key
                    WHERE d.status = 'pending' AND w.enabled = 0)
                OR EXISTS (
                    SELECT 1 FROM webhook_outbox AS o JOIN webhook_endpoints AS w ON w.key = o.endpoint_key
                    WHERE w.enabled = 0)
            """)?.int(0) == 1
    }

    func failPendingOfDisabledEndpoints() throws -> Int {
        // The one writer orders every enqueue and disable, so this finds nothing unless a row
        // was written around the store.
        try db.execute(
            """
            UPDATE webhook_deliveries SET status = 'failed', error = 'endpoint disabled', next_attempt_at = NULL
            WHERE status = 'pending' AND endpoint_key IN (SELECT key FROM webhook_endpoints WHERE enabled = 0)
            """)
        var failed = db.changes
        let disabledWithWaitingEvents = try db.rows(
            """
            SELECT DISTINCT o.endpoint_key FROM webhook_outbox AS o
            JOIN webhook_endpoints AS w ON w.key = o.endpoint_key WHERE w.enabled = 0
            """
        ) { $0.int(at: 0) }
        for key in disabledWithWaitingEvents {
            failed += try failWaitingEvents(endpointKey: key)
        }
        return failed
    }

    func disableWebhookEndpoint(key: Int64, now: Timestamp) throws {
        try db.execute("UPDATE webhook_endpoints SET enabled = 0 WHERE key = ?", [key])
        webhookFilters?.endpointsChanged()
        try db.execute(
            """
            UPDATE webhook_deliveries SET status = 'failed', error = 'endpoint disabled', next_attempt_at = NULL
            WHERE endpoint_key = ? AND status = 'pending'
            """, [key])
        _ = try failWaitingEvents(endpointKey: key)
    }
}

/// Each tenant's enabled webhook endpoints (key and filter), kept by the store for its writer, so
/// that a change in a tenant with webhooks costs no "is this event wanted" query per event and its
/// outbox rows are plain inserts. Every endpoint change goes through the one writer. Its rule: from
/// an endpoint change until the end of that write group the cache is bypassed (the change may
/// still roll back with its savepoint or its group, and SQL then answers for whatever state the
/// connection sees); at the group's end it is emptied and refills from committed rows. It never
/// holds an endpoint the database lacks, nor lacks one it has.
final class WebhookFilterCache: Sendable {
    struct Endpoint: Sendable {
        var key: Int64
        /// The types it wants; nil for every type. A set decoded once when the cache fills: the
        /// stored `,type,` string was searched with a new needle string per event.
        var types: Set<String>?

        func wants(_ type: String) -> Bool {
            types?.contains(type) ?? true
        }
    }

    private struct State {
        var byTenant: [String: [Endpoint]] = [:]
        var dirty = false
    }
    private let state = Mutex(State())
    /// The delivery worker's claims, kept beside the filters because both belong to the one writer.
    let leases = WebhookLeases()

    var isDirty: Bool { state.withLock { $0.dirty } }
    func endpoints(tenantID: String) -> [Endpoint]? { state.withLock { $0.byTenant[tenantID] } }
    func store(_ endpoints: [Endpoint], tenantID: String) { state.withLock { $0.byTenant[tenantID] = endpoints } }

    /// An endpoint was created, deleted or disabled in the running group.
    func endpointsChanged() {
        state.withLock {
            $0.byTenant.removeAll()
            $0.dirty = true
        }
    }

    /// The writer finished a group, committed or rolled back.
    func groupEnded() {
        state.withLock {
            if $0.dirty {
                $0.byTenant.removeAll()
                $0.dirty = false
            }
        }
    }
}

/// Attempts a worker has claimed and not yet recorded, each until its lease ends: the SQLite
/// store's stand-in for writing the lease into the row (one server per file, API.md §12).
final class WebhookLeases: Sendable {
    private let leases = Mutex([Int64: Int64]())

    /// Keys leased past `now`; forgets the expired ones.
    func held(at now: Timestamp) -> Set<Int64> {
        leases.withLock { leases in
            leases = leases.filter { $0.value > now.millis }
            return Set(leases.keys)
        }
    }

    func take(_ keys: [Int64], until: Timestamp) {
        leases.withLock { leases in for key in keys { leases[key] = until.millis } }
    }

    func release(_ key: Int64) {
        _ = leases.withLock { $0.removeValue(forKey: key) }
    }
}

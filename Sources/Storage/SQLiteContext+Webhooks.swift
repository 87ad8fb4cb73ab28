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

private func required<T>(_ value: T?, _ table: String, _ column: String) throws -> T {
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

    func webhookDeliveries(endpointKey: Int64, beforeKey: Int64?, limit: Int) throws -> [WebhookDeliveryRecord] {
        try flushOutbox()
        let table = "webhook_deliveries"
        let recorded = try db.query(
            """
            SELECT key, event_id, type, attempt, status, response_status, error, created_at, next_attempt_at
            FROM webhook_deliveries
            WHERE endpoint_key = ?1 AND (?2 IS NULL OR key < ?2) ORDER BY key DESC LIMIT ?3
            """, [endpointKey, beforeKey, limit]
        ).map { row in
            WebhookDeliveryRecord(
                key: try required(row.int(0), table, "key"), eventID: try required(row.string(1), table, "event_id"),
                type: try required(row.string(2), table, "type"),
                attempt: Int(try required(row.int(3), table, "attempt")),
                status: try required(row.string(4), table, "status"), responseStatus: row.int(5).map { Int($0) },
                error: row.string(6), createdAt: Timestamp(millis: try required(row.int(7), table, "created_at")),
                nextAttemptAt: row.int(8).map(Timestamp.init(millis:)))
        }
        // First attempts still waiting in the outbox, shown as the pending rows they become.
        let waiting = try outboxEvents(endpointKey: endpointKey, beforeKey: beforeKey ?? .max, limit: limit).map {
            WebhookDeliveryRecord(
                key: $0.key, eventID: $0.event.id, type: $0.event.type, attempt: 1, status: "pending",
                responseStatus: nil, error: nil, createdAt: Timestamp(millis: $0.event.createdAt),
                nextAttemptAt: Timestamp(millis: $0.event.createdAt))
        }
        if waiting.isEmpty { return recorded }
        return Array((recorded + waiting).sorted { $0.key > $1.key }.prefix(limit))
    }

    /// Up to `limit` events of the endpoint still waiting for their first attempt, with delivery
    /// keys below `beforeKey`, newest first.
    private func outboxEvents(endpointKey: Int64, beforeKey: Int64, limit: Int) throws
        -> [(key: Int64, event: OutboxEvent)]
    {
        var found: [(key: Int64, event: OutboxEvent)] = []
        // The row holding `beforeKey - 1` may reach past it; the rows below it follow, a page of
        // rows at a time (each row holds one event or more).
        var rows = try outboxRows(
            "SELECT key, first_key, events FROM webhook_outbox WHERE endpoint_key = ?1 AND key >= ?2 ORDER BY key LIMIT 1",
            [endpointKey, beforeKey]
        ).filter { $0.firstKey < beforeKey }
        var below = beforeKey
        while true {
            for row in rows {
                let recorded = try recordedKeys(row)
                for (offset, event) in row.events.enumerated().reversed() {
                    let key = row.firstKey + Int64(offset)
                    if key < beforeKey && !recorded.contains(key) { found.append((key, event)) }
                    if found.count == limit { return found }
                }
                below = min(below, row.firstKey)
            }
            rows = try outboxRows(
                """
                SELECT key, first_key, events FROM webhook_outbox WHERE endpoint_key = ?1 AND key < ?2
                ORDER BY key DESC LIMIT ?3
                """, [endpointKey, below, limit])
            if rows.isEmpty { return found }
        }
    }

    private struct OutboxRow {
        struct Destination {
            var url: String
            var secret: String
            var tenantID: String
        }
        var key: Int64
        var firstKey: Int64
        var events: [OutboxEvent]
        var endpointKey: Int64 = 0
        var destination: Destination? = nil
    }

    /// What a query of ``outboxRows(_:_:reading:)`` selects after key, first_key and events.
    private enum OutboxColumns {
        case events, endpointKey, destination
    }

    /// Rows of `webhook_outbox`: the query's first columns are key, first_key and events; then
    /// endpoint_key; then the endpoint's URL, secret and tenant.
    private func outboxRows(_ sql: String, _ arguments: [any SQLiteBindable], reading columns: OutboxColumns = .events)
        throws
        -> [OutboxRow]
    {
        let (table, endpoints) = ("webhook_outbox", "webhook_endpoints")
        return try db.query(sql, arguments) { row in
            let key = try required(row.int(at: 0), table, "key")
            let first = try required(row.int(at: 1), table, "first_key")
            let events = try OutboxRowText.decode(try required(row.string(at: 2), table, "events"))
            guard events.count == Int(key - first + 1) else {
                throw UndecodableRowError(table: table, column: "events")
            }
            var outboxRow = OutboxRow(key: key, firstKey: first, events: events)
            if columns != .events {
                outboxRow.endpointKey = try required(row.int(at: 3), table, "endpoint_key")
            }
            if columns == .destination {
                outboxRow.destination = OutboxRow.Destination(
                    url: try required(row.string(at: 4), endpoints, "url"),
                    secret: try required(row.string(at: 5), endpoints, "secret"),
                    tenantID: try required(row.string(at: 6), endpoints, "tenant_id"))
            }
            return outboxRow
        }
    }

    /// The keys of the row's events whose first attempt is already in `webhook_deliveries`: the
    /// events of a row that a batch took only part of. Usually none.
    private func recordedKeys(_ row: OutboxRow) throws -> Set<Int64> {
        Set(
            try db.query("SELECT key FROM webhook_deliveries WHERE key BETWEEN ?1 AND ?2", [row.firstKey, row.key]) {
                $0.int(at: 0)
            })
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
    private func cachedWebhookEndpoints(tenantID: String) throws -> [WebhookFilterCache.Endpoint]? {
        guard let cache = webhookFilters, !cache.isDirty else { return nil }
        if let cached = cache.endpoints(tenantID: tenantID) { return cached }
        let endpoints = try db.query(
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

    func claimDueWebhookDeliveries(now: Timestamp, limit: Int, leaseUntil: Timestamp) throws
        -> [DueWebhookDelivery]
    {
        try flushOutbox()
        let table = "webhook_deliveries"
        // One server per SQLite file (API.md §12), so the writer's memory can hold the leases and
        // the claim writes nothing (a page or two of the table and the due index per batch, in
        // a group the requests share). Attempts still leased are read past, then skipped. A crash
        // forgets the leases, and every pending attempt is due again: at least once, as before.
        let leases = webhookFilters?.leases
        let held = leases?.held(at: now) ?? []
        // Retries, and first attempts from before migration 0005: pending webhook_deliveries rows.
        var due: [(at: Int64, delivery: DueWebhookDelivery)] = try db.query(
            """
            SELECT d.key, d.endpoint_key, w.url, w.secret, d.event_id, d.attempt, d.type, w.tenant_id, d.event_at,
                d.data, d.body, d.next_attempt_at
            FROM webhook_deliveries AS d JOIN webhook_endpoints AS w ON w.key = d.endpoint_key
            WHERE d.status = 'pending' AND d.next_attempt_at <= ? AND w.enabled = 1
            ORDER BY d.next_attempt_at, d.key LIMIT ?
            """, [now.millis, limit + held.count]
        ).filter { row in row.int(0).map { !held.contains($0) } ?? true }.prefix(limit).map { row in
            let eventID = try required(row.string(4), table, "event_id")
            let body = try WebhookOutbox.body(
                kept: row.string(10), id: eventID, type: try required(row.string(6), table, "type"),
                tenantID: try required(row.string(7), "webhook_endpoints", "tenant_id"),
                createdAt: Timestamp(millis: try required(row.int(8), table, "event_at")), data: row.string(9))
            let delivery = DueWebhookDelivery(
                key: try required(row.int(0), table, "key"),
                endpointKey: try required(row.int(1), table, "endpoint_key"),
                url: try required(row.string(2), "webhook_endpoints", "url"),
                secret: try required(row.string(3), "webhook_endpoints", "secret"),
                eventID: eventID, body: body, attempt: Int(try required(row.int(5), table, "attempt")))
            return (try required(row.int(11), table, "next_attempt_at"), delivery)
        }
        // First attempts waiting in the outbox, oldest first. Each row holds at least one event,
        // so `limit + held` rows hold `limit` events that are neither leased nor recorded, if
        // there are that many.
        for row in try outboxRows(
            """
            SELECT o.key, o.first_key, o.events, o.endpoint_key, w.url, w.secret, w.tenant_id
            FROM webhook_outbox AS o JOIN webhook_endpoints AS w ON w.key = o.endpoint_key
            WHERE w.enabled = 1 ORDER BY o.key LIMIT ?
            """, [limit + held.count], reading: .destination)
        {
            let recorded = try recordedKeys(row)
            for (offset, event) in row.events.enumerated() where event.createdAt <= now.millis {
                let key = row.firstKey + Int64(offset)
                guard !held.contains(key), !recorded.contains(key), let destination = row.destination else { continue }
                let body = try WebhookOutbox.body(
                    kept: nil, id: event.id, type: event.type, tenantID: destination.tenantID,
                    createdAt: Timestamp(millis: event.createdAt), data: event.data)
                due.append(
                    (
                        event.createdAt,
                        DueWebhookDelivery(
                            key: key, endpointKey: row.endpointKey, url: destination.url, secret: destination.secret,
                            eventID: event.id, body: body, attempt: 1)
                    ))
            }
        }
        let claimed = due.sorted { ($0.at, $0.delivery.key) < ($1.at, $1.delivery.key) }.prefix(limit).map(\.delivery)
        if let leases {
            leases.take(claimed.map(\.key), until: leaseUntil)
            return claimed
        }
        // Without the writer's leases (a context made outside the store): the lease is written
        // into the row. Outbox events have no row to write it in; such a caller claims once.
        for delivery in claimed {
            try db.execute(
                "UPDATE webhook_deliveries SET next_attempt_at = ? WHERE key = ?", [leaseUntil.millis, delivery.key])
        }
        return claimed
    }

    func pendingWebhookDeliveryCount() throws -> Int {
        try flushOutbox()
        return Int(
            try db.queryOne(
                """
                SELECT (SELECT count(*) FROM webhook_deliveries WHERE status = 'pending')
                    + (SELECT coalesce(sum(key - first_key + 1), 0) FROM webhook_outbox)
                    - (SELECT count(*) FROM webhook_outbox AS o JOIN webhook_deliveries AS d
                           ON d.key BETWEEN o.first_key AND o.key)
                """)?.int(0) ?? 0)
    }

    func pushSubscriptionHolders(tenantID: String, deviceID: String, token: String) throws -> [Int64] {
        try db.query(
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
        try flushOutbox()
        // Its deliveries, which carry their events, go by ON DELETE CASCADE; its waiting events here.
        try db.execute("DELETE FROM webhook_outbox WHERE endpoint_key = ?", [key])
        try db.execute("DELETE FROM webhook_endpoints WHERE key = ?", [key])
        webhookFilters?.endpointsChanged()
    }

    func disableWebhookEndpoint(key: Int64, now: Timestamp) throws {
        try flushOutbox()
        try db.execute("UPDATE webhook_endpoints SET enabled = 0 WHERE key = ?", [key])
        webhookFilters?.endpointsChanged()
        try db.execute(
            """
            UPDATE webhook_deliveries SET status = 'failed', error = 'endpoint disabled', next_attempt_at = NULL
            WHERE endpoint_key = ? AND status = 'pending'
            """, [key])
        // Its waiting events become failed first attempts, as its pending rows just did.
        for row in try outboxRows(
            "SELECT key, first_key, events FROM webhook_outbox WHERE endpoint_key = ? ORDER BY key", [key])
        {
            let recorded = try recordedKeys(row)
            for (offset, event) in row.events.enumerated() where !recorded.contains(row.firstKey + Int64(offset)) {
                try insertAttempt(
                    key: row.firstKey + Int64(offset), endpointKey: key, event: event, attempt: 1, status: "failed",
                    responseStatus: nil, error: "endpoint disabled", createdAt: event.createdAt, nextAttemptAt: nil)
            }
        }
        try db.execute("DELETE FROM webhook_outbox WHERE endpoint_key = ?", [key])
    }

    func enqueueWebhookEvent(
        id: String, tenantID: String, type: String, data: String, now: Timestamp, endpointKey: Int64?
    ) throws -> Int {
        // The endpoints come from the writer's cache when it holds the tenant, else from SQL. The
        // event waits in the job's buffer, written with the job's other events at its end.
        var endpoints: [Int64] = []
        if endpointKey == nil, let cached = try cachedWebhookEndpoints(tenantID: tenantID) {
            for endpoint in cached where endpoint.wants(type) { endpoints.append(endpoint.key) }
        } else {
            endpoints = try db.query(
                """
                SELECT key FROM webhook_endpoints
                WHERE tenant_id = ?1 AND enabled = 1 AND CASE WHEN ?3 IS NULL
                    THEN events = '*' OR instr(events, ',' || ?2 || ',') > 0 ELSE key = ?3 END
                """, [tenantID, type, endpointKey]
            ) { $0.int(at: 0) }
        }
        let event = OutboxEvent(id: id, type: type, createdAt: now.millis, data: data)
        let buffer = outbox ?? OutboxWriter()
        for key in endpoints { buffer.append(event, endpointKey: key) }
        if outbox == nil { try writeOutboxRows(buffer) }
        return endpoints.count
    }

    /// Writes the events the running job queued (see ``OutboxWriter``).
    func flushOutbox() throws {
        if let outbox { try writeOutboxRows(outbox) }
    }

    private func writeOutboxRows(_ buffer: OutboxWriter) throws {
        for (endpointKey, events) in buffer.take() {
            let first = try reserveDeliveryKeys(events.count)
            try db.execute(
                "INSERT INTO webhook_outbox (key, first_key, endpoint_key, events) VALUES (?, ?, ?, ?)",
                [first + Int64(events.count) - 1, first, endpointKey, try OutboxRowText.encode(events)])
        }
    }

    private func reserveDeliveryKeys(_ count: Int) throws -> Int64 {
        if let outbox { return try outbox.reserveKeys(count, in: db) }
        return try OutboxWriter.largestKey(in: db) + 1
    }

    private func insertAttempt(
        key: Int64, endpointKey: Int64, event: OutboxEvent, attempt: Int, status: String, responseStatus: Int?,
        error: String?, createdAt: Int64, nextAttemptAt: Int64?
    ) throws {
        try db.execute(
            """
            INSERT INTO webhook_deliveries (key, endpoint_key, event_id, type, event_at, data, attempt, status,
                                            response_status, error, created_at, next_attempt_at)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            """,
            [
                key, endpointKey, event.id, event.type, event.createdAt, event.data, attempt, status, responseStatus,
                error, createdAt, nextAttemptAt,
            ])
    }

    func completeWebhookDelivery(
        key: Int64, succeeded: Bool, responseStatus: Int?, error: String?, now: Timestamp, retryAt: Timestamp?
    ) throws {
        try flushOutbox()
        defer { webhookFilters?.leases.release(key) }
        let status = succeeded ? "succeeded" : "failed"
        if try db.queryOne("SELECT 1 FROM webhook_deliveries WHERE key = ?", [key]) != nil {
            // A retry (or a first attempt from before migration 0005): its pending row is updated.
            try db.execute(
                """
                UPDATE webhook_deliveries SET status = ?, response_status = ?, error = ?, created_at = ?,
                    next_attempt_at = ?
                WHERE key = ? AND status = 'pending'
                """, [status, responseStatus, error, now.millis, retryAt?.millis, key])
            guard db.changes > 0, let retryAt else { return }
            try db.execute(
                """
                INSERT INTO webhook_deliveries (key, endpoint_key, event_id, type, event_at, data, body, attempt,
                                                status, created_at, next_attempt_at)
                SELECT ?4, endpoint_key, event_id, type, event_at, data, body, attempt + 1, 'pending', ?2, ?3
                FROM webhook_deliveries WHERE key = ?1
                """, [key, now.millis, retryAt.millis, try reserveDeliveryKeys(1)])
            return
        }
        // A first attempt: its event leaves the outbox row for a webhook_deliveries row of its own.
        guard
            let row = try outboxRows(
                "SELECT key, first_key, events, endpoint_key FROM webhook_outbox WHERE key >= ? ORDER BY key LIMIT 1",
                [key], reading: .endpointKey
            ).first, row.firstKey <= key
        else { return }  // gone with its endpoint meanwhile
        let (event, endpointKey) = (row.events[Int(key - row.firstKey)], row.endpointKey)
        try insertAttempt(
            key: key, endpointKey: endpointKey, event: event, attempt: 1, status: status,
            responseStatus: responseStatus, error: error, createdAt: now.millis, nextAttemptAt: retryAt?.millis)
        if let retryAt {
            try insertAttempt(
                key: try reserveDeliveryKeys(1), endpointKey: endpointKey, event: event, attempt: 2, status: "pending",
                responseStatus: nil, error: nil, createdAt: now.millis, nextAttemptAt: retryAt.millis)
        }
        if try recordedKeys(row).count == row.events.count {
            try db.execute("DELETE FROM webhook_outbox WHERE key = ?", [row.key])
        }
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

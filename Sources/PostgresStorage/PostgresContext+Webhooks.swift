import Identity
import Postgres

// MARK: - Idempotency records (API.md §13)

extension PostgresContext {
    func idempotencyRecord(scope: String, key: String) throws -> IdempotencyRecord? {
        guard
            let row = try db.queryOne(
                """
                SELECT method, path, body_sha256, status, content_type, response, created_at
                FROM idempotency_records WHERE scope = $1 AND key = $2
                """, [scope, key])
        else { return nil }
        return IdempotencyRecord(
            scope: scope, key: key, method: try row.string(0), path: try row.string(1), bodySHA256: try row.bytes(2),
            status: Int(try row.int(3)), contentType: try row.string(4), response: try row.bytes(5),
            createdAt: Timestamp(millis: try row.int(6)))
    }

    func insertIdempotencyRecord(_ r: IdempotencyRecord) throws {
        // Across servers the primary key decides: the second claim fails with a unique violation,
        // its job rolls back, and the caller reads and replays the first answer.
        _ = try db.execute(
            """
            INSERT INTO idempotency_records (scope, key, method, path, body_sha256, status, content_type, response,
                                             created_at)
            VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
            """,
            [r.scope, r.key, r.method, r.path, r.bodySHA256, r.status, r.contentType, r.response, r.createdAt.millis])
    }

    func idempotencyRecordsExist(createdBefore cutoff: Timestamp) throws -> Bool {
        try db.queryOne(
            "SELECT EXISTS (SELECT 1 FROM idempotency_records WHERE created_at < $1)", [cutoff.millis])?.bool(0)
            ?? false
    }

    func purgeIdempotencyRecords(createdBefore cutoff: Timestamp, limit: Int) throws -> Int {
        try db.execute(
            """
            DELETE FROM idempotency_records WHERE (scope, key) IN (
                SELECT scope, key FROM idempotency_records WHERE created_at < $1 ORDER BY created_at LIMIT $2)
            """, [cutoff.millis, limit])
    }
}

// MARK: - Webhook endpoints, events and deliveries (API.md §14)

extension PostgresContext {
    private static let endpointColumns = "key, id, tenant_id, url, events, description, secret, enabled, created_at"

    private static func endpoint(_ row: PostgresRow) throws -> WebhookEndpointRecord {
        let events = try row.string(4)
        return WebhookEndpointRecord(
            key: try row.int(0), id: try row.string(1), tenantID: try row.string(2), url: try row.string(3),
            events: WebhookEndpointRecord.events(stored: events),
            description: try row.optionalString(5), secret: try row.string(6), enabled: try row.bool(7),
            createdAt: Timestamp(millis: try row.int(8)))
    }

    func webhookEndpoints(tenantID: String, afterKey: Int64, limit: Int) throws -> [WebhookEndpointRecord] {
        try db.query(
            """
            SELECT \(Self.endpointColumns) FROM webhook_endpoints WHERE tenant_id = $1 AND key > $2
            ORDER BY key LIMIT $3
            """, [tenantID, afterKey, limit]
        ).map(Self.endpoint)
    }

    func webhookEndpoint(tenantID: String, id: String) throws -> WebhookEndpointRecord? {
        try db.queryOne(
            "SELECT \(Self.endpointColumns) FROM webhook_endpoints WHERE tenant_id = $1 AND id = $2", [tenantID, id]
        ).map(Self.endpoint)
    }

    func webhookDeliveries(endpointKey: Int64, beforeKey: Int64?, limit: Int) throws -> [WebhookDeliveryRecord] {
        try db.query(
            """
            SELECT key, event_id, type, attempt, status, response_status, error, created_at, next_attempt_at
            FROM webhook_deliveries
            WHERE endpoint_key = $1 AND ($2::bigint IS NULL OR key < $2) ORDER BY key DESC LIMIT $3
            """, [endpointKey, beforeKey, limit]
        ).map { row in
            WebhookDeliveryRecord(
                key: try row.int(0), eventID: try row.string(1), type: try row.string(2),
                attempt: Int(try row.int(3)), status: try row.string(4),
                responseStatus: try row.optionalInt(5).map { Int($0) }, error: try row.optionalString(6),
                createdAt: Timestamp(millis: try row.int(7)),
                nextAttemptAt: try row.optionalInt(8).map(Timestamp.init(millis:)))
        }
    }

    func webhookWanted(tenantID: String, type: String) throws -> Bool {
        try db.queryOne(
            """
            SELECT 1 FROM webhook_endpoints WHERE tenant_id = $1 AND enabled
                AND (events = '*' OR strpos(events, ',' || $2 || ',') > 0) LIMIT 1
            """, [tenantID, type]) != nil
    }

    func pendingWebhookDeliveryCount() throws -> Int {
        Int(try db.queryOne("SELECT count(*) FROM webhook_deliveries WHERE status = 'pending'")?.int(0) ?? 0)
    }

    func webhookDeliveryMayBeDue(now: Timestamp) throws -> Bool {
        try db.queryOne(
            "SELECT EXISTS (SELECT 1 FROM webhook_deliveries WHERE status = 'pending' AND next_attempt_at <= $1)",
            [now.millis])?.bool(0) ?? false
    }

    func pushSubscriptionHolders(tenantID: String, deviceID: String, token: String) throws -> [Int64] {
        try db.query(
            """
            SELECT DISTINCT subscriber_key FROM push_subscriptions
            WHERE tenant_id = $1 AND (device_id = $2 OR token = $3)
            """, [tenantID, deviceID, token]
        ).map { try $0.int(0) }
    }

    func insertWebhookEndpoint(_ e: WebhookEndpointRecord) throws -> Int64 {
        guard
            let key = try db.queryOne(
                """
                INSERT INTO webhook_endpoints (id, tenant_id, url, events, description, secret, enabled, created_at)
                VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING key
                """,
                [
                    e.id, e.tenantID, e.url, e.storedEvents,
                    e.description, e.secret, e.enabled, e.createdAt.millis,
                ])?.int(0)
        else { throw PostgresStoreError.undecodable("webhook_endpoints.key", "no row returned") }
        return key
    }

    func deleteWebhookEndpoint(key: Int64) throws {
        _ = try db.execute("DELETE FROM webhook_endpoints WHERE key = $1", [key])
    }

    func disableWebhookEndpoint(key: Int64, now: Timestamp) throws {
        _ = try db.execute("UPDATE webhook_endpoints SET enabled = false WHERE key = $1", [key])
        _ = try db.execute(
            """
            UPDATE webhook_deliveries SET status = 'failed', error = 'endpoint disabled', next_attempt_at = NULL
            WHERE endpoint_key = $1 AND status = 'pending'
            """, [key])
    }

    func disabledEndpointsHavePending() throws -> Bool {
        try db.queryOne(
            """
            SELECT EXISTS (
                SELECT 1 FROM webhook_deliveries AS d JOIN webhook_endpoints AS w ON w.key = d.endpoint_key
                WHERE d.status = 'pending' AND NOT w.enabled)
            """)?.bool(0) ?? false
    }

    func failPendingOfDisabledEndpoints() throws -> Int {
        try db.execute(
            """
            UPDATE webhook_deliveries AS d SET status = 'failed', error = 'endpoint disabled', next_attempt_at = NULL
            FROM webhook_endpoints AS w
            WHERE w.key = d.endpoint_key AND NOT w.enabled AND d.status = 'pending'
            """, [])
    }

    func enqueueWebhookEvent(
        id: String, tenantID: String, type: String, data: String, now: Timestamp, endpointKey: Int64?
    ) throws -> Int {
        // One row per endpoint that wants the event, in one statement; no separate event row.
        try db.execute(
            """
            INSERT INTO webhook_deliveries (endpoint_key, event_id, type, event_at, data, attempt, status, created_at,
                                            next_attempt_at)
            SELECT key, $1, $4, $2, $6, 1, 'pending', $2, $2 FROM webhook_endpoints
            WHERE tenant_id = $3 AND enabled AND CASE WHEN $5::bigint IS NULL
                THEN events = '*' OR strpos(events, ',' || $4 || ',') > 0 ELSE key = $5 END
            """, [id, now.millis, tenantID, type, endpointKey, data])
    }

    func claimDueWebhookDeliveries(now: Timestamp, limit: Int, leaseUntil: Timestamp) throws
        -> [DueWebhookDelivery]
    {
        // SKIP LOCKED: a server claiming at the same moment takes other rows, never these.
        try db.query(
            """
            WITH due AS (
                SELECT d.key FROM webhook_deliveries AS d JOIN webhook_endpoints AS w ON w.key = d.endpoint_key
                WHERE d.status = 'pending' AND d.next_attempt_at <= $1 AND w.enabled
                ORDER BY d.next_attempt_at, d.key LIMIT $2 FOR UPDATE OF d SKIP LOCKED)
            UPDATE webhook_deliveries AS d SET next_attempt_at = $3
            FROM due, webhook_endpoints AS w
            WHERE d.key = due.key AND w.key = d.endpoint_key
            RETURNING d.key, d.endpoint_key, w.url, w.secret, d.event_id, d.attempt, d.type, w.tenant_id, d.event_at,
                d.data, d.body
            """, [now.millis, limit, leaseUntil.millis]
        ).map { row in
            let eventID = try row.string(4)
            let body = try WebhookOutbox.body(
                kept: try row.optionalString(10), id: eventID, type: try row.string(6), tenantID: try row.string(7),
                createdAt: Timestamp(millis: try row.int(8)), data: try row.optionalString(9))
            return DueWebhookDelivery(
                key: try row.int(0), endpointKey: try row.int(1), url: try row.string(2), secret: try row.string(3),
                eventID: eventID, body: body, attempt: Int(try row.int(5)))
        }.sorted { $0.key < $1.key }
    }

    func completeWebhookDelivery(
        key: Int64, succeeded: Bool, responseStatus: Int?, error: String?, now: Timestamp, retryAt: Timestamp?
    ) throws {
        let changed = try db.execute(
            """
            UPDATE webhook_deliveries SET status = $1, response_status = $2, error = $3, created_at = $4,
                next_attempt_at = $5
            WHERE key = $6 AND status = 'pending'
            """, [succeeded ? "succeeded" : "failed", responseStatus, error, now.millis, retryAt?.millis, key])
        guard changed > 0, let retryAt else { return }
        _ = try db.execute(
            """
            INSERT INTO webhook_deliveries (endpoint_key, event_id, type, event_at, data, body, attempt, status,
                                            created_at, next_attempt_at)
            SELECT endpoint_key, event_id, type, event_at, data, body, attempt + 1, 'pending', $2, $3
            FROM webhook_deliveries WHERE key = $1
            """, [key, now.millis, retryAt.millis])
    }
}

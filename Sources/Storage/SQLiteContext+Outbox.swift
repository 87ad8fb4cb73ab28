import Identity
import SQLite

// MARK: - The webhook outbox on SQLite (API.md §14; the rows are explained at OutboxWriter)
//
// An event's first attempt waits in a `webhook_outbox` row with the other events its write group
// queued for the same endpoint. When the worker records that attempt it becomes a
// `webhook_deliveries` row under the key the event was given, and the outbox row goes once all its
// events are recorded. Retries, and first attempts from before migration 0005, are pending
// `webhook_deliveries` rows.

extension SQLiteContext {
    // MARK: Queueing

    func enqueueWebhookEvent(
        id: String, tenantID: String, type: String, data: String, now: Timestamp, endpointKey: Int64?
    ) throws -> Int {
        // The endpoints come from the writer's cache when it holds the tenant, else from SQL.
        var endpoints: [Int64] = []
        if endpointKey == nil, let cached = try cachedWebhookEndpoints(tenantID: tenantID) {
            for endpoint in cached where endpoint.wants(type) { endpoints.append(endpoint.key) }
        } else {
            endpoints = try db.rows(
                """
                SELECT key FROM webhook_endpoints
                WHERE tenant_id = ?1 AND enabled = 1 AND CASE WHEN ?3 IS NULL
                    THEN events = '*' OR instr(events, ',' || ?2 || ',') > 0 ELSE key = ?3 END
                """, [tenantID, type, endpointKey]
            ) { $0.int(at: 0) }
        }
        let event = OutboxEvent(id: id, type: type, createdAt: now.millis, data: data)
        try OutboxRowText.check(event)
        guard let outbox else {
            // A context made outside the store's writer: the row is written at once.
            for key in endpoints { try insertOutboxRow(endpointKey: key, events: [event]) }
            return endpoints.count
        }
        for key in endpoints { outbox.append(event, endpointKey: key) }
        return endpoints.count
    }

    /// Writes the group's waiting events as outbox rows: the writer runs this just before each
    /// commit. If an endpoint was deleted or disabled in the group, each endpoint is looked up
    /// first: a deleted one's events are dropped with it, a disabled one's are recorded as failed
    /// first attempts, as disabling it failed its pending ones.
    func writeGroupOutbox() throws {
        guard let outbox else { return }
        let buffer = outbox.takeGroup()
        guard !buffer.isEmpty else { return }
        let endpointsChanged = webhookFilters?.isDirty ?? true
        for (endpointKey, events) in buffer {
            if endpointsChanged {
                guard
                    let enabled = try db.queryOne("SELECT enabled FROM webhook_endpoints WHERE key = ?", [endpointKey])
                else { continue }
                if enabled.bool(0) != true {
                    let first = try reserveDeliveryKeys(events.count)
                    for (offset, event) in events.enumerated() {
                        try insertAttempt(
                            key: first + Int64(offset), endpointKey: endpointKey, event: event, attempt: 1,
                            status: "failed", responseStatus: nil, error: "endpoint disabled",
                            createdAt: event.createdAt, nextAttemptAt: nil)
                    }
                    continue
                }
            }
            var start = 0
            while start < events.count {
                let end = min(start + OutboxWriter.eventsPerRow, events.count)
                try insertOutboxRow(endpointKey: endpointKey, events: Array(events[start..<end]))
                start = end
            }
        }
    }

    private func insertOutboxRow(endpointKey: Int64, events: [OutboxEvent]) throws {
        let first = try reserveDeliveryKeys(events.count)
        try db.execute(
            "INSERT INTO webhook_outbox (key, first_key, endpoint_key, events) VALUES (?, ?, ?, ?)",
            [first + Int64(events.count) - 1, first, endpointKey, OutboxRowText.encode(events)])
    }

    private func reserveDeliveryKeys(_ count: Int) throws -> Int64 {
        if let outbox { return try outbox.reserveKeys(count, in: db) }
        return try OutboxWriter.largestKey(in: db) + 1
    }

    // MARK: Reading outbox rows

    /// Where an outbox row's events are: its keys and endpoint.
    private struct OutboxRow {
        var key: Int64
        var firstKey: Int64
        var endpointKey: Int64
        var count: Int { Int(key - firstKey + 1) }
    }

    /// The rows of a query selecting key, first_key and endpoint_key of `webhook_outbox`.
    private func outboxRows(_ sql: String, _ arguments: [any SQLiteBindable]) throws -> [OutboxRow] {
        let table = "webhook_outbox"
        return try db.rows(sql, arguments) { row in
            OutboxRow(
                key: try required(row.int(at: 0), table, "key"),
                firstKey: try required(row.int(at: 1), table, "first_key"),
                endpointKey: try required(row.int(at: 2), table, "endpoint_key"))
        }
    }

    /// The row's events in key order, from the writer's last decoded rows when there.
    private func events(of row: OutboxRow) throws -> [OutboxEvent] {
        if let decoded = outbox?.decodedEvents(key: row.key) { return decoded }
        let text = try db.firstRow("SELECT events FROM webhook_outbox WHERE key = ?", [row.key]) { $0.string(at: 0) }
        let events = try OutboxRowText.decode(try required(text ?? nil, "webhook_outbox", "events"))
        guard events.count == row.count else { throw UndecodableRowError(table: "webhook_outbox", column: "events") }
        outbox?.keepDecoded(events, key: row.key)
        return events
    }

    /// The row's events still waiting, with their delivery keys, in key order: all of them but
    /// those whose first attempt is already a `webhook_deliveries` row (a batch took only part of
    /// the row; usually none).
    private func waiting(in row: OutboxRow) throws -> [(key: Int64, event: OutboxEvent)] {
        let recorded = Set(
            try db.rows("SELECT key FROM webhook_deliveries WHERE key BETWEEN ?1 AND ?2", [row.firstKey, row.key]) {
                $0.int(at: 0)
            })
        return try events(of: row).enumerated().compactMap { offset, event in
            let key = row.firstKey + Int64(offset)
            return recorded.contains(key) ? nil : (key, event)
        }
    }

    // MARK: Listing

    func webhookDeliveries(endpointKey: Int64, beforeKey: Int64?, limit: Int) throws -> [WebhookDeliveryRecord] {
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
        let waiting = try waitingEvents(endpointKey: endpointKey, beforeKey: beforeKey ?? .max, limit: limit).map {
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
    private func waitingEvents(endpointKey: Int64, beforeKey: Int64, limit: Int) throws
        -> [(key: Int64, event: OutboxEvent)]
    {
        var found: [(key: Int64, event: OutboxEvent)] = []
        // The row holding `beforeKey - 1` may reach past it; the rows below it follow, a page of
        // rows at a time (each holds one event or more).
        var rows = try outboxRows(
            """
            SELECT key, first_key, endpoint_key FROM webhook_outbox WHERE endpoint_key = ?1 AND key >= ?2
            ORDER BY key LIMIT 1
            """, [endpointKey, beforeKey]
        ).filter { $0.firstKey < beforeKey }
        var below = beforeKey
        while true {
            for row in rows {
                for waiting in try waiting(in: row).reversed() where waiting.key < beforeKey {
                    found.append(waiting)
                    if found.count == limit { return found }
                }
                below = min(below, row.firstKey)
            }
            rows = try outboxRows(
                """
                SELECT key, first_key, endpoint_key FROM webhook_outbox WHERE endpoint_key = ?1 AND key < ?2
                ORDER BY key DESC LIMIT ?3
                """, [endpointKey, below, limit])
            if rows.isEmpty { return found }
        }
    }

    func pendingWebhookDeliveryCount() throws -> Int {
        Int(
            try db.queryOne(
                """
                SELECT (SELECT count(*) FROM webhook_deliveries WHERE status = 'pending')
                    + (SELECT coalesce(sum(key - first_key + 1), 0) FROM webhook_outbox)
                    - (SELECT count(*) FROM webhook_outbox AS o JOIN webhook_deliveries AS d
                           ON d.key BETWEEN o.first_key AND o.key)
                """)?.int(0) ?? 0)
    }

    // MARK: The worker

    func webhookDeliveryMayBeDue(now: Timestamp) throws -> Bool {
        // A retry due on the partial index, or any first attempt: an outbox row lives until every
        // event it holds is recorded.
        try db.queryOne(
            """
            SELECT EXISTS (SELECT 1 FROM webhook_deliveries WHERE status = 'pending' AND next_attempt_at <= ?)
                OR EXISTS (SELECT 1 FROM webhook_outbox)
            """, [now.millis])?.int(0) == 1
    }

    func claimDueWebhookDeliveries(now: Timestamp, limit: Int, leaseUntil: Timestamp) throws
        -> [DueWebhookDelivery]
    {
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
        due += try dueFirstAttempts(now: now, limit: limit, held: held)
        let claimed = due.sorted { ($0.at, $0.delivery.key) < ($1.at, $1.delivery.key) }.prefix(limit).map(\.delivery)
        if let leases {
            leases.take(claimed.map(\.key), until: leaseUntil)
            return claimed
        }
        // Without the writer's leases (a context made outside the store): the lease is written
        // into the row. Outbox events have no row of their own to write it in; such a caller claims once.
        for delivery in claimed {
            try db.execute(
                "UPDATE webhook_deliveries SET next_attempt_at = ? WHERE key = ?", [leaseUntil.millis, delivery.key])
        }
        return claimed
    }

    /// Up to `limit` first attempts due at `now` from the outbox, oldest first, neither leased nor
    /// recorded. Every row holds at least one event not yet recorded, so reading `limit + held`
    /// rows finds `limit` of them if there are that many.
    private func dueFirstAttempts(now: Timestamp, limit: Int, held: Set<Int64>) throws
        -> [(at: Int64, delivery: DueWebhookDelivery)]
    {
        let endpoints = "webhook_endpoints"
        var due: [(at: Int64, delivery: DueWebhookDelivery)] = []
        var destinations: [Int64: (url: String, secret: String, tenantID: String)?] = [:]
        var (after, rowsLeft) = (Int64.min, limit + held.count)
        while due.count < limit && rowsLeft > 0 {
            let rows = try outboxRows(
                "SELECT key, first_key, endpoint_key FROM webhook_outbox WHERE key > ? ORDER BY key LIMIT ?",
                [after, min(rowsLeft, 8)])
            if rows.isEmpty { break }
            rowsLeft -= rows.count
            for row in rows {
                after = row.key
                if destinations[row.endpointKey] == nil {
                    destinations[row.endpointKey] = try db.firstRow(
                        "SELECT url, secret, tenant_id FROM webhook_endpoints WHERE key = ? AND enabled = 1",
                        [row.endpointKey]
                    ) { endpoint in
                        (
                            try required(endpoint.string(at: 0), endpoints, "url"),
                            try required(endpoint.string(at: 1), endpoints, "secret"),
                            try required(endpoint.string(at: 2), endpoints, "tenant_id")
                        )
                    }
                }
                guard let destination = destinations[row.endpointKey] ?? nil else { continue }
                for (key, event) in try waiting(in: row) where due.count < limit {
                    guard event.createdAt <= now.millis, !held.contains(key) else { continue }
                    let body = try WebhookOutbox.body(
                        kept: nil, id: event.id, type: event.type, tenantID: destination.tenantID,
                        createdAt: Timestamp(millis: event.createdAt), data: event.data)
                    due.append(
                        (
                            event.createdAt,
                            DueWebhookDelivery(
                                key: key, endpointKey: row.endpointKey, url: destination.url,
                                secret: destination.secret, eventID: event.id, body: body, attempt: 1)
                        ))
                }
            }
        }
        return due
    }

    func completeWebhookDelivery(
        key: Int64, succeeded: Bool, responseStatus: Int?, error: String?, now: Timestamp, retryAt: Timestamp?
    ) throws {
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
                "SELECT key, first_key, endpoint_key FROM webhook_outbox WHERE key >= ? ORDER BY key LIMIT 1", [key]
            ).first, row.firstKey <= key
        else { return }  // gone with its endpoint meanwhile
        let event = try events(of: row)[Int(key - row.firstKey)]
        try insertAttempt(
            key: key, endpointKey: row.endpointKey, event: event, attempt: 1, status: status,
            responseStatus: responseStatus, error: error, createdAt: now.millis, nextAttemptAt: retryAt?.millis)
        if let retryAt {
            try insertAttempt(
                key: try reserveDeliveryKeys(1), endpointKey: row.endpointKey, event: event, attempt: 2,
                status: "pending", responseStatus: nil, error: nil, createdAt: now.millis,
                nextAttemptAt: retryAt.millis)
        }
        let recorded = try db.queryOne(
            "SELECT count(*) FROM webhook_deliveries WHERE key BETWEEN ? AND ?", [row.firstKey, row.key]
        )?.int(0)
        if recorded == Int64(row.count) {
            try db.execute("DELETE FROM webhook_outbox WHERE key = ?", [row.key])
        }
    }

    /// The endpoint's waiting events become failed first attempts (it was disabled), and its
    /// outbox rows go. Returns how many events there were.
    @discardableResult
    func failWaitingEvents(endpointKey: Int64) throws -> Int {
        var failed = 0
        for row in try outboxRows(
            "SELECT key, first_key, endpoint_key FROM webhook_outbox WHERE endpoint_key = ? ORDER BY key", [endpointKey]
        ) {
            for (key, event) in try waiting(in: row) {
                try insertAttempt(
                    key: key, endpointKey: endpointKey, event: event, attempt: 1,
                    status: "failed", responseStatus: nil, error: "endpoint disabled", createdAt: event.createdAt,
                    nextAttemptAt: nil)
                failed += 1
            }
        }
        try db.execute("DELETE FROM webhook_outbox WHERE endpoint_key = ?", [endpointKey])
        return failed
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
}

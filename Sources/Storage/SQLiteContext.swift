import Identity
import JSON
import SQLite

/// The identity store's reads and writes as SQL over one connection. Every statement goes
/// through the connection's statement cache; every lookup uses an index (see migrations/).
struct SQLiteContext: IdentityWriteContext {
    let db: Database
    /// Told when a subscriber is retired, so the store schedules the deletion of its events.
    var retiredPurge: RetiredPurge? = nil
    /// Told what a row held that was skipped rather than refused (an unknown tenant setting), for the log.
    var onSkipped: DatabaseErrorHandler? = nil
    /// Marked when a workspace, tenant or key is written, so the store announces it after commit.
    /// (Objects rather than closures: a method's closure was an allocation every write job.)
    var authChanges: (any AuthChangeMark)? = nil
    /// The writer's cache of enabled webhook filters; nil on readers, which query.
    var webhookFilters: WebhookFilterCache? = nil
    /// The writer's outbox: this job's events and the delivery keys; nil on readers and on
    /// contexts made outside the store's writer, which write each event's row at once.
    var outbox: OutboxWriter? = nil
    /// The indexed columns of the subscriber rows this job read, so that saving a record whose
    /// id, anonymous and verified are as stored leaves those indexes alone; nil: every save
    /// writes all columns.
    var storedIdentities: StoredIdentities? = nil

    // MARK: - Tenancy

    func tenant(id: String) throws -> TenantRecord? {
        guard
            let row = try db.queryOne(
                """
                SELECT id, workspace_id, name, settings, identity_secret, previous_secret, previous_expires_at, created_at
                FROM tenants WHERE id = ?
                """, [id])
        else { return nil }
        let text = try row.requiredString("settings")
        guard let settingsJSON = (try? JSONParser.parse(Array(text.utf8)))?.objectValue else {
            throw RowDecodingError(column: "settings", expected: "a JSON object", found: "TEXT", sql: "tenants")
        }
        let (settings, skipped) = try TenantSettings.decode(settingsJSON)
        for var problem in skipped {
            problem.reason += " (tenant \(id))"
            onSkipped?("tenant settings", problem)
        }
        return TenantRecord(
            id: try row.requiredString("id"), workspaceID: try row.requiredString("workspace_id"),
            name: try row.requiredString("name"), settings: settings,
            secrets: IdentitySecretSet(
                current: Array(try row.requiredString("identity_secret").utf8),
                previous: try row.optionalString("previous_secret").map { Array($0.utf8) },
                previousExpiresAt: try row.optionalInt("previous_expires_at")),
            createdAt: Timestamp(millis: try row.requiredInt("created_at")))
    }

    func apiKey(hash: String) throws -> APIKeyRecord? {
        try db.queryOne(
            "SELECT id, kind, workspace_id, tenant_id, display_prefix, created_at, revoked_at FROM api_keys WHERE hash = ?",
            [hash]
        ).map(Self.apiKeyRecord)
    }

    func apiKeys(workspaceID: String, tenantID: String?) throws -> [APIKeyRecord] {
        try db.query(
            """
            SELECT id, kind, workspace_id, tenant_id, display_prefix, created_at, revoked_at FROM api_keys
            WHERE workspace_id = ? AND tenant_id IS ? ORDER BY created_at, id
            """, [workspaceID, tenantID]
        ).map(Self.apiKeyRecord)
    }

    private static func apiKeyRecord(_ row: Row) throws -> APIKeyRecord {
        let kindText = try row.requiredString("kind")
        guard let kind = KeyKind(rawValue: kindText) else {
            throw RowDecodingError(column: "kind", expected: "client, secret or workspace", found: "TEXT", sql: nil)
        }
        return APIKeyRecord(
            id: try row.requiredString("id"), kind: kind, workspaceID: try row.requiredString("workspace_id"),
            tenantID: try row.optionalString("tenant_id"), displayPrefix: try row.requiredString("display_prefix"),
            createdAt: Timestamp(millis: try row.requiredInt("created_at")),
            revokedAt: try row.optionalInt("revoked_at").map(Timestamp.init(millis:)))
    }

    func workspaceExists(id: String) throws -> Bool {
        try db.queryOne("SELECT 1 FROM workspaces WHERE id = ?", [id]) != nil
    }

    func firstWorkspaceID() throws -> String? {
        try db.firstRow("SELECT id FROM workspaces ORDER BY created_at, id LIMIT 1") { try $0.requiredString(at: 0) }
    }

    func insertWorkspace(id: String, name: String, now: Timestamp) throws {
        try db.execute("INSERT INTO workspaces (id, name, created_at) VALUES (?, ?, ?)", [id, name, now.millis])
        authChanges?.markAuthChanged()
    }

    func insertTenant(_ tenant: TenantRecord) throws {
        try db.execute(
            """
            INSERT INTO tenants (id, workspace_id, name, settings, identity_secret, previous_secret,
                                 previous_expires_at, created_at)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?)
            """,
            [
                tenant.id, tenant.workspaceID, tenant.name, JSONValue.object(tenant.settings.json).jsonString,
                String(decoding: tenant.secrets.current, as: UTF8.self),
                tenant.secrets.previous.map { String(decoding: $0, as: UTF8.self) },
                tenant.secrets.previousExpiresAt, tenant.createdAt.millis,
            ])
        authChanges?.markAuthChanged()
    }

    func updateTenant(_ tenant: TenantRecord) throws {
        try db.execute(
            """
            UPDATE tenants SET name = ?, settings = ?, identity_secret = ?, previous_secret = ?, previous_expires_at = ?
            WHERE id = ?
            """,
            [
                tenant.name, JSONValue.object(tenant.settings.json).jsonString,
                String(decoding: tenant.secrets.current, as: UTF8.self),
                tenant.secrets.previous.map { String(decoding: $0, as: UTF8.self) },
                tenant.secrets.previousExpiresAt, tenant.id,
            ])
        authChanges?.markAuthChanged()
    }

    func insertAPIKey(_ key: APIKeyRecord, hash: String) throws {
        try db.execute(
            """
            INSERT INTO api_keys (hash, id, kind, workspace_id, tenant_id, display_prefix, created_at, revoked_at)
            VALUES (?, ?, ?, ?, ?, ?, ?, NULL)
            """,
            [hash, key.id, key.kind.rawValue, key.workspaceID, key.tenantID, key.displayPrefix, key.createdAt.millis])
        authChanges?.markAuthChanged()
    }

    func revokeAPIKey(id: String, workspaceID: String, tenantID: String?, now: Timestamp) throws -> Bool {
        try db.execute(
            """
            UPDATE api_keys SET revoked_at = ?
            WHERE id = ? AND workspace_id = ? AND tenant_id IS ? AND revoked_at IS NULL
            """, [now.millis, id, workspaceID, tenantID])
        if db.changes > 0 { authChanges?.markAuthChanged() }
        return db.changes > 0
    }

    // MARK: - Subscribers and aliases

    func subscriberKey(tenantID: String, alias: String) throws -> Int64? {
        try db.firstRow(
            "SELECT subscriber_key FROM aliases WHERE tenant_id = ? AND alias = ?", .text(tenantID), .text(alias)
        ) {
            try $0.requiredInt(at: 0)
        }
    }

    // The hot statements below are built once: interpolating on every call would allocate a new
    // string and make the statement cache compare it byte by byte.
    private static let subscriberColumns = """
        key, tenant_id, id, anonymous, verified, email, email_subscribed, last_seq, event_count, created_at, updated_at
        """
    private static let subscriberByKeySQL = "SELECT \(subscriberColumns) FROM subscribers WHERE key = ? AND retired = 0"
    private static let subscriberByAliasSQL = """
        SELECT s.key, s.tenant_id, s.id, s.anonymous, s.verified, s.email, s.email_subscribed, s.last_seq,
            s.event_count, s.created_at, s.updated_at
        FROM aliases AS a JOIN subscribers AS s ON s.key = a.subscriber_key
        WHERE a.tenant_id = ? AND a.alias = ? AND s.retired = 0
        """

    func subscriber(key: Int64) throws -> SubscriberRecord? {
        let record = try db.firstRow(Self.subscriberByKeySQL, .integer(key), read: Self.subscriberRecord)
        if let record { storedIdentities?.remember(record) }
        return record
    }

    func subscriber(tenantID: String, alias: String) throws -> SubscriberRecord? {
        // One statement for the alias lookup and the row: every request that names a subscriber runs it.
        let record = try db.firstRow(
            Self.subscriberByAliasSQL, .text(tenantID), .text(alias), read: Self.subscriberRecord)
        if let record { storedIdentities?.remember(record) }
        return record
    }

    private static func subscriberRecord(_ row: Statement) throws -> SubscriberRecord {
        SubscriberRecord(
            key: try row.requiredInt(at: 0), tenantID: try row.requiredString(at: 1), id: try row.requiredString(at: 2),
            anonymous: try row.requiredBool(at: 3), verified: try row.requiredBool(at: 4),
            email: try row.optionalString(at: 5), emailSubscribed: try row.requiredBool(at: 6),
            lastSeq: try row.requiredInt(at: 7), eventCount: try row.requiredInt(at: 8),
            createdAt: Timestamp(millis: try row.requiredInt(at: 9)),
            updatedAt: Timestamp(millis: try row.requiredInt(at: 10)))
    }

    func listSubscribers(
        tenantID: String, afterKey: Int64, limit: Int, anonymous: Bool?, verified: Bool?
    ) throws -> [SubscriberRecord] {
        try page(tenantID: tenantID, from: afterKey, newestFirst: false, limit: limit, anonymous, verified)
    }

    func listSubscribers(
        tenantID: String, beforeKey: Int64, limit: Int, anonymous: Bool?, verified: Bool?
    ) throws -> [SubscriberRecord] {
        try page(tenantID: tenantID, from: beforeKey, newestFirst: true, limit: limit, anonymous, verified)
    }

    /// One keyset page in either direction. Without a filter it walks `subscribers_by_tenant`;
    /// with one, it walks `subscribers_identified (tenant_id, anonymous, verified)`, whose rows
    /// end in the rowid, once per (anonymous, verified) pair the filter allows, each leg stopping
    /// after `limit` rows, and merges the legs. So a page costs about `limit` rows read however
    /// rare the filtered kind is: a million anonymous subscribers and a few verified ones still
    /// answer "verified" at once (https://sqlite.org/queryplanner.html, "Covering indexes" and
    /// the rowid at the end of every index entry).
    private func page(
        tenantID: String, from key: Int64, newestFirst: Bool, limit: Int, _ anonymous: Bool?, _ verified: Bool?
    ) throws -> [SubscriberRecord] {
        let (comparison, direction) = newestFirst ? ("<", "DESC") : (">", "")
        let arguments: [any SQLiteBindable] = [tenantID, key, limit]
        guard anonymous != nil || verified != nil else {
            return try db.rows(
                """
                SELECT \(Self.subscriberColumns) FROM subscribers INDEXED BY subscribers_by_tenant
                WHERE tenant_id = ?1 AND key \(comparison) ?2 AND retired = 0 ORDER BY key \(direction) LIMIT ?3
                """, arguments, read: Self.subscriberRecord)
        }
        var legs: [String] = []
        for a in anonymous.map({ [$0] }) ?? [false, true] {
            for v in verified.map({ [$0] }) ?? [false, true] {
                legs.append(
                    """
                    SELECT * FROM (SELECT \(Self.subscriberColumns) FROM subscribers INDEXED BY subscribers_identified
                        WHERE tenant_id = ?1 AND anonymous = \(a ? 1 : 0) AND verified = \(v ? 1 : 0)
                            AND key \(comparison) ?2 AND retired = 0
                        ORDER BY key \(direction) LIMIT ?3)
                    """)
            }
        }
        // The SQL is one of a few fixed texts (filters are literals), so each stays a cached statement.
        let sql = legs.joined(separator: "\nUNION ALL\n") + "\nORDER BY key \(direction) LIMIT ?3"
        return try db.rows(sql, arguments, read: Self.subscriberRecord)
    }

    func subscriberCounts(tenantID: String) throws -> (identified: Int, verified: Int) {
        let counts = try db.firstRow(
            """
            SELECT count(*), coalesce(sum(verified), 0) FROM subscribers
            WHERE tenant_id = ? AND anonymous = 0 AND retired = 0
            """, [tenantID]
        ) { (Int(try $0.requiredInt(at: 0)), Int(try $0.requiredInt(at: 1))) }
        return counts ?? (0, 0)
    }

    func insertSubscriber(tenantID: String, id: String, anonymous: Bool, now: Timestamp) throws -> SubscriberRecord {
        try db.execute(
            """
            INSERT INTO subscribers (tenant_id, id, anonymous, created_at, updated_at) VALUES (?, ?, ?, ?, ?)
            """, [tenantID, id, anonymous, now.millis, now.millis])
        let key = db.lastInsertRowID
        try addAlias(tenantID: tenantID, alias: id, key: key)
        let record = SubscriberRecord(
            key: key, tenantID: tenantID, id: id, anonymous: anonymous, createdAt: now, updatedAt: now)
        storedIdentities?.remember(record)
        return record
    }

    /// Saves the record. When its id, anonymous and verified are as this job read them, only
    /// the other columns are named: SQLite rewrites the entry of every index on a column the SET
    /// names, even to the same value, so an events batch's save rewrote two index entries (and
    /// dirtied their pages, two more WAL pages per person per group) for nothing.
    func updateSubscriber(_ r: SubscriberRecord) throws {
        // Bound value by value (`runBinding`): every write of a subscriber runs one of these.
        if let storedIdentities, storedIdentities.unchanged(r) {
            try db.cachedStatement(
                """
                UPDATE subscribers SET email = ?, email_subscribed = ?, last_seq = ?, event_count = ?, updated_at = ?
                WHERE key = ?
                """
            ).runBinding(6) { try Self.bindSavedColumns(of: r, from: 1, in: $0) }
            return
        }
        try db.cachedStatement(
            """
            UPDATE subscribers SET id = ?, anonymous = ?, verified = ?, email = ?, email_subscribed = ?,
                last_seq = ?, event_count = ?, updated_at = ?
            WHERE key = ?
            """
        ).runBinding(9) { update in
            try update.bind(text: r.id, at: 1)
            try update.bind(.integer(r.anonymous ? 1 : 0), at: 2)
            try update.bind(.integer(r.verified ? 1 : 0), at: 3)
            try Self.bindSavedColumns(of: r, from: 4, in: update)
        }
        storedIdentities?.remember(r)
    }

    /// The columns every save of a subscriber sets, then its key, bound from parameter `first` on.
    private static func bindSavedColumns(of r: SubscriberRecord, from first: Int32, in update: Statement) throws {
        try update.bind(text: r.email, at: first)
        try update.bind(.integer(r.emailSubscribed ? 1 : 0), at: first + 1)
        try update.bind(.integer(r.lastSeq), at: first + 2)
        try update.bind(.integer(r.eventCount), at: first + 3)
        try update.bind(.integer(r.updatedAt.millis), at: first + 4)
        try update.bind(.integer(r.key), at: first + 5)
    }

    func addAlias(tenantID: String, alias: String, key: Int64) throws {
        let insert = try db.cachedStatement("INSERT INTO aliases (tenant_id, alias, subscriber_key) VALUES (?, ?, ?)")
        try insert.runBinding(3) {
            try $0.bind(text: tenantID, at: 1)
            try $0.bind(text: alias, at: 2)
            try $0.bind(.integer(key), at: 3)
        }
    }

    func aliases(key: Int64, excluding current: String) throws -> [String] {
        try db.rows(
            "SELECT alias FROM aliases WHERE subscriber_key = ? AND alias <> ? ORDER BY alias", .integer(key),
            .text(current)
        ) {
            try $0.requiredString(at: 0)
        }
    }

    func aliasCount(key: Int64) throws -> Int {
        // A covering scan of aliases_by_subscriber: at most maxAliases entries, and only merges ask.
        Int(
            try db.firstRow("SELECT count(*) FROM aliases WHERE subscriber_key = ?", .integer(key)) {
                try $0.requiredInt(at: 0)
            } ?? 0)
    }

    func reassignAliases(from: Int64, to: Int64) throws {
        try db.execute("UPDATE aliases SET subscriber_key = ? WHERE subscriber_key = ?", [to, from])
    }

    func deleteSubscriber(key: Int64) throws {
        // Child rows go by ON DELETE CASCADE (foreign keys are on for every connection).
        try db.execute("DELETE FROM subscribers WHERE key = ?", [key])
    }

    func retireSubscriber(key: Int64) throws {
        // Everything but the events goes now (a handful of rows). The row stays, marked and
        // renamed so its id is free again, until `purgeRetired(limit:)` has deleted its events:
        // it keeps the key from being reused while events still carry it.
        try db.execute("DELETE FROM aliases WHERE subscriber_key = ?", [key])
        try db.execute("DELETE FROM attributes WHERE subscriber_key = ?", [key])
        try db.execute("DELETE FROM push_subscriptions WHERE subscriber_key = ?", [key])
        try db.execute("DELETE FROM preferences WHERE subscriber_key = ?", [key])
        try db.execute("DELETE FROM devices WHERE subscriber_key = ?", [key])
        try db.execute(
            "UPDATE subscribers SET retired = 1, id = '$retired:' || key, email = NULL WHERE key = ?", [key])
        storedIdentities?.forget(key)
        retiredPurge?.request()
    }

    /// Works off up to `limit` events of one retired subscriber: moves them to the person that
    /// absorbed it while a move is pending (see `SQLiteContext+EventMoves.swift`), else deletes
    /// them; and deletes the subscriber row once it has none left. The store runs it as its own
    /// small write job, so a big absorb's events leave over many groups instead of inside the
    /// merge's.
    /// - Returns: false when no retired subscriber was left to work on.
    func purgeRetired(limit: Int) throws -> Bool {
        // Moves first: until one is done, the target's timeline reads reach into the source.
        if let move = try anyEventMove() {
            if try moveEvents(move, limit: limit) < limit {
                try db.execute("DELETE FROM subscribers WHERE key = ? AND retired = 1", [move.source])
            }
            return true
        }
        guard
            let key = try db.firstRow(
                "SELECT key FROM subscribers WHERE retired = 1 LIMIT 1",
                read: {
                    try $0.requiredInt(at: 0)
                })
        else {
            return false
        }
        try db.execute(
            """
            DELETE FROM events WHERE subscriber_key = ?1 AND seq IN (
                SELECT seq FROM events WHERE subscriber_key = ?1 ORDER BY seq LIMIT ?2)
            """, [key, limit])
        if db.changes < limit {
            try db.execute("DELETE FROM subscribers WHERE key = ? AND retired = 1", [key])
        }
        return true
    }

    // MARK: - Attributes

    func attributes(key: Int64) throws -> [(name: String, entry: AttributeEntry)] {
        try db.rows(
            "SELECT name, value, set_by_backend FROM attributes WHERE subscriber_key = ? ORDER BY name", .integer(key),
            read: { try Self.attribute($0, from: 0) })
    }

    private static func attribute(_ row: Statement, from c: Int32) throws -> (name: String, entry: AttributeEntry) {
        // Parsed from SQLite's own bytes: no String, no copy. Stored only after validation: text
        // that does not parse is a damaged row, not an absent attribute.
        let text = try row.requiredTextBytes(at: c + 1)
        guard let value = try? JSONParser.parse(text, maxDepth: 64) else {
            throw RowDecodingError(column: "value", expected: "JSON", found: "TEXT", sql: row.sql)
        }
        return (
            try row.requiredString(at: c), AttributeEntry(value: value, setByBackend: try row.requiredBool(at: c + 2))
        )
    }

    func writeAttributes(key: Int64, _ changes: [(name: String, entry: AttributeEntry?)]) throws {
        for (name, entry) in changes {
            if let entry {
                try db.execute(
                    """
                    INSERT INTO attributes (subscriber_key, name, value, set_by_backend) VALUES (?, ?, ?, ?)
                    ON CONFLICT (subscriber_key, name) DO UPDATE SET value = excluded.value,
                        set_by_backend = excluded.set_by_backend
                    """, [key, name, entry.value.jsonString, entry.setByBackend])
            } else {
                try db.execute("DELETE FROM attributes WHERE subscriber_key = ? AND name = ?", [key, name])
            }
        }
    }

    // MARK: - Push subscriptions, preferences, devices

    func pushSubscriptions(key: Int64) throws -> [PushSubscriptionRecord] {
        try db.rows(
            """
            SELECT device_id, token, platform, created_at, updated_at FROM push_subscriptions
            WHERE subscriber_key = ? ORDER BY updated_at DESC, device_id
            """, .integer(key), read: { try Self.pushSubscription($0, from: 0) })
    }

    private static func pushSubscription(_ row: Statement, from c: Int32) throws -> PushSubscriptionRecord {
        PushSubscriptionRecord(
            deviceID: try row.requiredString(at: c), token: try row.requiredString(at: c + 1),
            platform: try row.requiredString(at: c + 2), createdAt: Timestamp(millis: try row.requiredInt(at: c + 3)),
            updatedAt: Timestamp(millis: try row.requiredInt(at: c + 4)))
    }

    func upsertPushSubscription(
        tenantID: String, key: Int64, deviceID: String, token: String, platform: String, now: Timestamp
    ) throws {
        // The device belongs to one subscriber at a time: its context leaves the previous owner.
        try db.execute(
            """
            DELETE FROM devices WHERE device_id = ?2 AND subscriber_key <> ?3 AND subscriber_key =
                (SELECT subscriber_key FROM push_subscriptions WHERE tenant_id = ?1 AND device_id = ?2)
            """, [tenantID, deviceID, key])
        // The token may be registered under another device id (reinstall): it moves here too.
        try db.execute(
            "DELETE FROM push_subscriptions WHERE tenant_id = ? AND token = ? AND device_id <> ?",
            [tenantID, token, deviceID])
        try db.execute(
            """
            INSERT INTO push_subscriptions (tenant_id, device_id, subscriber_key, token, platform, created_at, updated_at)
            VALUES (?, ?, ?, ?, ?, ?, ?)
            ON CONFLICT (tenant_id, device_id) DO UPDATE SET subscriber_key = excluded.subscriber_key,
                token = excluded.token, platform = excluded.platform, updated_at = excluded.updated_at
            """, [tenantID, deviceID, key, token, platform, now.millis, now.millis])
    }

    func deletePushSubscription(tenantID: String, key: Int64, deviceID: String) throws -> Bool {
        try db.execute(
            "DELETE FROM push_subscriptions WHERE tenant_id = ? AND device_id = ? AND subscriber_key = ?",
            [tenantID, deviceID, key])
        return db.changes > 0
    }

    func evictPushSubscriptions(key: Int64, keep: Int) throws -> Int {
        try db.execute(
            """
            DELETE FROM push_subscriptions WHERE subscriber_key = ?1 AND device_id IN (
                SELECT device_id FROM push_subscriptions WHERE subscriber_key = ?1
                ORDER BY updated_at DESC, device_id LIMIT -1 OFFSET ?2)
            """, [key, keep])
        return db.changes
    }

    func movePushSubscriptions(from: Int64, to: Int64) throws {
        try db.execute("UPDATE push_subscriptions SET subscriber_key = ? WHERE subscriber_key = ?", [to, from])
    }

    func preferences(key: Int64) throws -> [PreferenceRecord] {
        try db.rows(
            "SELECT topic, subscribed, updated_at FROM preferences WHERE subscriber_key = ? ORDER BY topic",
            .integer(key),
            read: { try Self.preference($0, from: 0) })
    }

    private static func preference(_ row: Statement, from c: Int32) throws -> PreferenceRecord {
        PreferenceRecord(
            topic: try row.requiredString(at: c), subscribed: try row.requiredBool(at: c + 1),
            updatedAt: Timestamp(millis: try row.requiredInt(at: c + 2)))
    }

    func writePreference(key: Int64, _ p: PreferenceRecord) throws {
        try db.execute(
            """
            INSERT INTO preferences (subscriber_key, topic, subscribed, updated_at) VALUES (?, ?, ?, ?)
            ON CONFLICT (subscriber_key, topic) DO UPDATE SET subscribed = excluded.subscribed,
                updated_at = excluded.updated_at
            """, [key, p.topic, p.subscribed, p.updatedAt.millis])
    }

    func devices(key: Int64) throws -> [DeviceRecord] {
        try db.rows(
            """
            SELECT device_id, platform, app_version, os_version, model, locale, time_zone, last_seen_at
            FROM devices WHERE subscriber_key = ? ORDER BY last_seen_at DESC, device_id
            """, .integer(key), read: { try Self.device($0, from: 0) })
    }

    private static func device(_ row: Statement, from c: Int32) throws -> DeviceRecord {
        DeviceRecord(
            deviceID: try row.requiredString(at: c), platform: try row.optionalString(at: c + 1),
            appVersion: try row.optionalString(at: c + 2), osVersion: try row.optionalString(at: c + 3),
            model: try row.optionalString(at: c + 4), locale: try row.optionalString(at: c + 5),
            timeZone: try row.optionalString(at: c + 6), lastSeenAt: Timestamp(millis: try row.requiredInt(at: c + 7)))
    }

    func upsertDevice(key: Int64, _ d: DeviceRecord) throws {
        // coalesce: a field the device did not report keeps its stored value.
        try db.execute(
            """
            INSERT INTO devices (subscriber_key, device_id, platform, app_version, os_version, model, locale,
                                 time_zone, last_seen_at)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
            ON CONFLICT (subscriber_key, device_id) DO UPDATE SET
                platform = coalesce(excluded.platform, platform),
                app_version = coalesce(excluded.app_version, app_version),
                os_version = coalesce(excluded.os_version, os_version),
                model = coalesce(excluded.model, model),
                locale = coalesce(excluded.locale, locale),
                time_zone = coalesce(excluded.time_zone, time_zone),
                last_seen_at = max(excluded.last_seen_at, last_seen_at)
            """,
            [
                key, d.deviceID, d.platform, d.appVersion, d.osVersion, d.model, d.locale, d.timeZone,
                d.lastSeenAt.millis,
            ])
    }

    // MARK: - Snapshots

    /// Rows of one part of a snapshot (aliases, attributes, push subscriptions, preferences,
    /// devices) up to which the writer reads a write's answer itself (`snapshotIfCheap`).
    static let writerSnapshotPartLimit = 16

    /// Read on the writer when no part of the person has more than `writerSnapshotPartLimit`
    /// rows. There the pages are in the writer's cache, while a reader after the commit starts
    /// with an empty one (in WAL mode a reader's cache is dropped whenever the file changed)
    /// and reads each page again: 20 % less CPU per identify. A bigger person is left to a
    /// reader, so that a write to a person with 1,000 aliases does not cost the one writer
    /// thread many times what one to a new person costs; the check steps at most one index entry
    /// past the limit per part.
    ///
    /// Two statements: the check, then one read of all five parts (`snapshot(of:)`). The check
    /// asks whether a part has a row past the limit (`EXISTS … OFFSET`), which is cheaper than
    /// counting each part up to it. It stays a statement of its own: a LIMIT on the read instead
    /// would make a big person's write step through and decode rows it then throws away
    /// (`FanOutLimitTests`; the figures are in bench/README.md).
    func snapshotIfCheap(of record: SubscriberRecord) throws -> SubscriberSnapshot? {
        let big = try db.firstRow(
            """
            SELECT EXISTS (SELECT 1 FROM aliases WHERE subscriber_key = ?1 LIMIT 1 OFFSET ?2)
                OR EXISTS (SELECT 1 FROM attributes WHERE subscriber_key = ?1 LIMIT 1 OFFSET ?2)
                OR EXISTS (SELECT 1 FROM push_subscriptions WHERE subscriber_key = ?1 LIMIT 1 OFFSET ?2)
                OR EXISTS (SELECT 1 FROM preferences WHERE subscriber_key = ?1 LIMIT 1 OFFSET ?2)
                OR EXISTS (SELECT 1 FROM devices WHERE subscriber_key = ?1 LIMIT 1 OFFSET ?2)
            """, .integer(record.key), .integer(Int64(Self.writerSnapshotPartLimit)),
            read: { try $0.requiredBool(at: 0) })
        // No row (never, for EXISTS) is taken as big: the reader then reads it.
        guard let big, !big else { return nil }
        return try snapshot(of: record)
    }

    /// All five parts of the snapshot in one statement, where a read per part was five: each
    /// statement costs ~7k instructions before its rows, most of an uncached GET's SQL. A part
    /// has at most a tenant's limit of rows (aliases, attributes…), sorted here in the order its
    /// own read returns.
    func snapshot(of record: SubscriberRecord) throws -> SubscriberSnapshot {
        var aliases: [String] = []
        var attributes: [(name: String, entry: AttributeEntry)] = []
        var push: [PushSubscriptionRecord] = []
        var preferences: [PreferenceRecord] = []
        var devices: [DeviceRecord] = []
        _ = try db.rows(Self.smallSnapshotSQL, .integer(record.key), .text(record.id)) { row -> Void? in
            switch try row.requiredInt(at: 0) {
            case 0: aliases.append(try row.requiredString(at: 1))
            case 1: attributes.append(try Self.attribute(row, from: 1))
            case 2: push.append(try Self.pushSubscription(row, from: 1))
            case 3: preferences.append(try Self.preference(row, from: 1))
            default: devices.append(try Self.device(row, from: 1))
            }
            return nil
        }
        // Each part in the order its own read returns (SQLite compares text bytewise): a compound
        // SELECT promises no order, so the parts are sorted here, a few rows each.
        func bytewise(_ a: String, _ b: String) -> Bool { a.utf8.lexicographicallyPrecedes(b.utf8) }
        aliases.sort(by: bytewise)
        attributes.sort { bytewise($0.name, $1.name) }
        push.sort {
            $0.updatedAt.millis == $1.updatedAt.millis
                ? bytewise($0.deviceID, $1.deviceID) : $0.updatedAt.millis > $1.updatedAt.millis
        }
        preferences.sort { bytewise($0.topic, $1.topic) }
        devices.sort {
            $0.lastSeenAt.millis == $1.lastSeenAt.millis
                ? bytewise($0.deviceID, $1.deviceID) : $0.lastSeenAt.millis > $1.lastSeenAt.millis
        }
        return SubscriberSnapshot(
            record: record, attributes: attributes, aliases: aliases, pushSubscriptions: push,
            preferences: preferences, devices: devices)
    }

    /// The five parts of a snapshot, tagged 0–4 in the first column and padded to the widest
    /// (devices).
    private static let smallSnapshotSQL = """
        SELECT 0, alias, NULL, NULL, NULL, NULL, NULL, NULL, NULL FROM aliases WHERE subscriber_key = ?1 AND alias <> ?2
        UNION ALL SELECT 1, name, value, set_by_backend, NULL, NULL, NULL, NULL, NULL FROM attributes
            WHERE subscriber_key = ?1
        UNION ALL SELECT 2, device_id, token, platform, created_at, updated_at, NULL, NULL, NULL
            FROM push_subscriptions WHERE subscriber_key = ?1
        UNION ALL SELECT 3, topic, subscribed, updated_at, NULL, NULL, NULL, NULL, NULL FROM preferences
            WHERE subscriber_key = ?1
        UNION ALL SELECT 4, device_id, platform, app_version, os_version, model, locale, time_zone, last_seen_at
            FROM devices WHERE subscriber_key = ?1
        """

    // MARK: - Batched snapshots

    /// A page's snapshots in five statements whatever its size: the subscriber keys go in as one
    /// JSON array (`json_each`), so each child table is one cached statement probed by its index
    /// once per key, and rows come back grouped by subscriber in the order the single reads use.
    func snapshots(of records: [SubscriberRecord]) throws -> [SubscriberSnapshot] {
        guard !records.isEmpty else { return [] }
        let keys = "[" + records.map { String($0.key) }.joined(separator: ",") + "]"
        func grouped<T>(_ sql: String, _ read: (Statement) throws -> T) throws -> [Int64: [T]] {
            var byKey: [Int64: [T]] = [:]
            _ = try db.rows(sql, [keys]) { row -> Void? in
                byKey[try row.requiredInt(at: 0), default: []].append(try read(row))
                return nil
            }
            return byKey
        }
        let attributes = try grouped(
            """
            SELECT subscriber_key, name, value, set_by_backend FROM attributes
            WHERE subscriber_key IN (SELECT value FROM json_each(?)) ORDER BY subscriber_key, name
            """, { try Self.attribute($0, from: 1) })
        let aliases = try grouped(
            """
            SELECT subscriber_key, alias FROM aliases
            WHERE subscriber_key IN (SELECT value FROM json_each(?)) ORDER BY subscriber_key, alias
            """, { try $0.requiredString(at: 1) })
        let push = try grouped(
            """
            SELECT subscriber_key, device_id, token, platform, created_at, updated_at FROM push_subscriptions
            WHERE subscriber_key IN (SELECT value FROM json_each(?))
            ORDER BY subscriber_key, updated_at DESC, device_id
            """, { try Self.pushSubscription($0, from: 1) })
        let preferences = try grouped(
            """
            SELECT subscriber_key, topic, subscribed, updated_at FROM preferences
            WHERE subscriber_key IN (SELECT value FROM json_each(?)) ORDER BY subscriber_key, topic
            """, { try Self.preference($0, from: 1) })
        let devices = try grouped(
            """
            SELECT subscriber_key, device_id, platform, app_version, os_version, model, locale, time_zone, last_seen_at
            FROM devices WHERE subscriber_key IN (SELECT value FROM json_each(?))
            ORDER BY subscriber_key, last_seen_at DESC, device_id
            """, { try Self.device($0, from: 1) })
        return records.map { r in
            SubscriberSnapshot(
                record: r, attributes: attributes[r.key] ?? [], aliases: (aliases[r.key] ?? []).filter { $0 != r.id },
                pushSubscriptions: push[r.key] ?? [], preferences: preferences[r.key] ?? [],
                devices: devices[r.key] ?? [])
        }
    }

    // MARK: - Events

    private static let insertEventSQL = """
        INSERT INTO events (subscriber_key, seq, client_id, name, timestamp, received_at, properties)
        VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (subscriber_key, client_id) DO NOTHING
        """

    func insertEvent(key: Int64, seq: Int64, _ e: NewEvent) throws -> Bool {
        if try hasIncomingMoves(key), try isMovingIn(clientID: e.clientID, to: key) { return false }
        try db.cachedStatement(Self.insertEventSQL).runBinding(7) { insert in
            try insert.bind(.integer(key), at: 1)
            try insert.bind(.integer(seq), at: 2)
            try insert.bind(text: e.clientID, at: 3)
            try insert.bind(text: e.name, at: 4)
            try insert.bind(.integer(e.timestamp.millis), at: 5)
            try insert.bind(.integer(e.receivedAt.millis), at: 6)
            try insert.bind(text: e.propertiesJSON, at: 7)
        }
        return db.changes > 0
    }

    /// One statement for the whole batch, bound value by value: an argument array and a cache
    /// lookup per event cost ~2k of the writer thread's ~22k instructions per event. One probe
    /// for pending moves first: nearly every batch has none to check against.
    func insertEvents(key: Int64, afterSeq: Int64, _ events: [NewEvent]) throws -> Int {
        let moving = try hasIncomingMoves(key)
        let insert = try db.cachedStatement(Self.insertEventSQL)
        try insert.bind(.integer(key), at: 1)
        var stored = 0
        for e in events {
            if moving, try isMovingIn(clientID: e.clientID, to: key) { continue }
            try insert.bind(.integer(afterSeq + Int64(stored) + 1), at: 2)
            try insert.bind(text: e.clientID, at: 3)
            try insert.bind(text: e.name, at: 4)
            try insert.bind(.integer(e.timestamp.millis), at: 5)
            try insert.bind(.integer(e.receivedAt.millis), at: 6)
            try insert.bind(text: e.propertiesJSON, at: 7)
            try insert.runBound()
            if db.changes > 0 { stored += 1 }
        }
        return stored
    }

    /// Appends the source's events to the target's timeline (API.md §6, absorb). Usually they
    /// are only scheduled to move (`scheduleEventMove`): the merge's transaction then costs
    /// a few lookups instead of one insert per event.
    func copyEvents(from: Int64, to: Int64, afterSeq: Int64) throws -> Int {
        if let moved = try scheduleEventMove(from: from, to: to, afterSeq: afterSeq) { return moved }
        // One statement: numbering by row_number() keeps the source's order and leaves no gaps.
        try db.execute(
            """
            INSERT INTO events (subscriber_key, seq, client_id, name, timestamp, received_at, properties)
            SELECT ?1, ?3 + row_number() OVER (ORDER BY seq), client_id, name, timestamp, received_at, properties
            FROM events AS source
            WHERE source.subscriber_key = ?2 AND NOT EXISTS (
                SELECT 1 FROM events AS mine WHERE mine.subscriber_key = ?1 AND mine.client_id = source.client_id)
            ORDER BY seq
            """, [to, from, afterSeq])
        return db.changes
    }

    func events(key: Int64, afterSeq: Int64, limit: Int) throws -> [EventRecord] {
        try db.rows(
            try hasIncomingMoves(key) ? Self.eventsWhileMovingSQL : Self.eventsSQL, [key, afterSeq, limit]
        ) { row in
            EventRecord(
                seq: try row.requiredInt(at: 0),
                event: NewEvent(
                    clientID: try row.requiredString(at: 1), name: try row.requiredString(at: 2),
                    timestamp: Timestamp(millis: try row.requiredInt(at: 3)),
                    receivedAt: Timestamp(millis: try row.requiredInt(at: 4)),
                    propertiesJSON: try row.optionalString(at: 5)))
        }
    }

    private static let eventsSQL = """
        SELECT seq, client_id, name, timestamp, received_at, properties FROM events
        WHERE subscriber_key = ?1 AND seq > ?2 ORDER BY seq LIMIT ?3
        """

    /// The timeline of a subscriber with absorbed events still moving in: its own rows, and
    /// the sources' remaining ones at their target seqs. One read transaction sees each event
    /// exactly once, on one side or the other of a move.
    private static let eventsWhileMovingSQL = """
        SELECT seq, client_id, name, timestamp, received_at, properties FROM events
        WHERE subscriber_key = ?1 AND seq > ?2
        UNION ALL
        SELECT m.seq_offset + e.seq, e.client_id, e.name, e.timestamp, e.received_at, e.properties
        FROM event_moves AS m JOIN events AS e ON e.subscriber_key = m.source_key AND e.seq > ?2 - m.seq_offset
        WHERE m.target_key = ?1
        ORDER BY 1 LIMIT ?3
        """
}

/// The indexed columns (`id`, `anonymous`, `verified`) of the subscriber rows one write job has
/// read or saved, by key. One per job: a job rolled back takes its knowledge with it.
final class StoredIdentities {
    private struct Indexed: Equatable {
        var id: String
        var anonymous: Bool
        var verified: Bool
    }
    private var byKey: [Int64: Indexed] = [:]

    func remember(_ record: SubscriberRecord) {
        byKey[record.key] = Indexed(id: record.id, anonymous: record.anonymous, verified: record.verified)
    }

    func forget(_ key: Int64) { byKey[key] = nil }

    /// Whether the row of `record` holds its indexed columns already.
    func unchanged(_ record: SubscriberRecord) -> Bool {
        byKey[record.key] == Indexed(id: record.id, anonymous: record.anonymous, verified: record.verified)
    }
}

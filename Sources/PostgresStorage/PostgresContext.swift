import Identity
import JSON
import Postgres

/// The identity store's reads and writes as SQL over one PostgreSQL connection: the same
/// statements as `SQLiteContext`, in PostgreSQL's dialect (`$n` placeholders, booleans,
/// `IS NOT DISTINCT FROM`, `GREATEST`). Every statement is prepared once per connection.
///
/// Rows decode strictly: a `NULL` or a wrong type in a required column throws, naming the
/// column, instead of reading as a default.
struct PostgresContext: IdentityWriteContext {
    let db: Connection
    /// What the current group changed that matters after commit (auth records, retirements).
    var effects: GroupEffects? = nil
    /// Told what a row held that was skipped rather than refused (an unknown tenant setting), for the log.
    var onSkipped: (@Sendable (_ operation: String, _ error: any Error) -> Void)? = nil

    // MARK: - Tenancy

    func tenant(id: String) throws -> TenantRecord? {
        guard
            let row = try db.queryOne(
                """
                SELECT id, workspace_id, name, settings, identity_secret, previous_secret, previous_expires_at, created_at
                FROM tenants WHERE id = $1
                """, [id])
        else { return nil }
        guard let settingsJSON = (try? JSONParser.parse(Array(try row.string(3).utf8)))?.objectValue else {
            throw PostgresStoreError.undecodable("tenants.settings", "not a JSON object")
        }
        let (settings, skipped) = try TenantSettings.decode(settingsJSON)
        for var problem in skipped {
            problem.reason += " (tenant \(id))"
            onSkipped?("tenant settings", problem)
        }
        return TenantRecord(
            id: try row.string(0), workspaceID: try row.string(1), name: try row.string(2), settings: settings,
            secrets: IdentitySecretSet(
                current: Array(try row.string(4).utf8),
                previous: try row.optionalString(5).map { Array($0.utf8) },
                previousExpiresAt: try row.optionalInt(6)),
            createdAt: Timestamp(millis: try row.int(7)))
    }

    private static let apiKeyColumns = "id, kind, workspace_id, tenant_id, display_prefix, created_at, revoked_at"

    func apiKey(hash: String) throws -> APIKeyRecord? {
        try db.queryOne("SELECT \(Self.apiKeyColumns) FROM api_keys WHERE hash = $1", [hash]).map(Self.apiKeyRecord)
    }

    func apiKeys(workspaceID: String, tenantID: String?) throws -> [APIKeyRecord] {
        try db.query(
            """
            SELECT \(Self.apiKeyColumns) FROM api_keys
            WHERE workspace_id = $1 AND tenant_id IS NOT DISTINCT FROM $2::text ORDER BY created_at, id
            """, [workspaceID, tenantID]
        ).map(Self.apiKeyRecord)
    }

    private static func apiKeyRecord(_ row: PostgresRow) throws -> APIKeyRecord {
        let kindName = try row.string(1)
        guard let kind = KeyKind(rawValue: kindName) else {
            throw PostgresStoreError.undecodable("api_keys.kind", kindName)
        }
        return APIKeyRecord(
            id: try row.string(0), kind: kind, workspaceID: try row.string(2), tenantID: try row.optionalString(3),
            displayPrefix: try row.string(4), createdAt: Timestamp(millis: try row.int(5)),
            revokedAt: try row.optionalInt(6).map(Timestamp.init(millis:)))
    }

    func workspaceExists(id: String) throws -> Bool {
        try db.queryOne("SELECT 1 FROM workspaces WHERE id = $1", [id]) != nil
    }

    func firstWorkspaceID() throws -> String? {
        try db.queryOne("SELECT id FROM workspaces ORDER BY created_at, id LIMIT 1")?.string(0)
    }

    func insertWorkspace(id: String, name: String, now: Timestamp) throws {
        try db.execute("INSERT INTO workspaces (id, name, created_at) VALUES ($1, $2, $3)", [id, name, now.millis])
        effects?.authChanged = true
    }

    func insertTenant(_ tenant: TenantRecord) throws {
        try db.execute(
            """
            INSERT INTO tenants (id, workspace_id, name, settings, identity_secret, previous_secret,
                                 previous_expires_at, created_at)
            VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
            """,
            [
                tenant.id, tenant.workspaceID, tenant.name, JSONValue.object(tenant.settings.json).jsonString,
                String(decoding: tenant.secrets.current, as: UTF8.self),
                tenant.secrets.previous.map { String(decoding: $0, as: UTF8.self) },
                tenant.secrets.previousExpiresAt, tenant.createdAt.millis,
            ])
        effects?.authChanged = true
    }

    func updateTenant(_ tenant: TenantRecord) throws {
        try db.execute(
            """
            UPDATE tenants SET name = $1, settings = $2, identity_secret = $3, previous_secret = $4,
                previous_expires_at = $5
            WHERE id = $6
            """,
            [
                tenant.name, JSONValue.object(tenant.settings.json).jsonString,
                String(decoding: tenant.secrets.current, as: UTF8.self),
                tenant.secrets.previous.map { String(decoding: $0, as: UTF8.self) },
                tenant.secrets.previousExpiresAt, tenant.id,
            ])
        effects?.authChanged = true
    }

    func insertAPIKey(_ key: APIKeyRecord, hash: String) throws {
        try db.execute(
            """
            INSERT INTO api_keys (hash, id, kind, workspace_id, tenant_id, display_prefix, created_at, revoked_at)
            VALUES ($1, $2, $3, $4, $5, $6, $7, NULL)
            """,
            [hash, key.id, key.kind.rawValue, key.workspaceID, key.tenantID, key.displayPrefix, key.createdAt.millis])
        effects?.authChanged = true
    }

    func revokeAPIKey(id: String, workspaceID: String, tenantID: String?, now: Timestamp) throws -> Bool {
        let changed = try db.execute(
            """
            UPDATE api_keys SET revoked_at = $1
            WHERE id = $2 AND workspace_id = $3 AND tenant_id IS NOT DISTINCT FROM $4::text AND revoked_at IS NULL
            """, [now.millis, id, workspaceID, tenantID])
        if changed > 0 { effects?.authChanged = true }
        return changed > 0
    }

    // MARK: - Subscribers and aliases

    func subscriberKey(tenantID: String, alias: String) throws -> Int64? {
        try db.queryOne("SELECT subscriber_key FROM aliases WHERE tenant_id = $1 AND alias = $2", [tenantID, alias])?
            .int(0)
    }

    private static let subscriberColumns = """
        key, tenant_id, id, anonymous, verified, email, email_subscribed, last_seq, event_count, created_at, updated_at
        """
    private static let subscriberByKeySQL =
        "SELECT \(subscriberColumns) FROM subscribers WHERE key = $1 AND NOT retired"
    private static let subscriberByAliasSQL = """
        SELECT s.key, s.tenant_id, s.id, s.anonymous, s.verified, s.email, s.email_subscribed, s.last_seq,
            s.event_count, s.created_at, s.updated_at
        FROM aliases AS a JOIN subscribers AS s ON s.key = a.subscriber_key
        WHERE a.tenant_id = $1 AND a.alias = $2 AND NOT s.retired
        """

    func subscriber(key: Int64) throws -> SubscriberRecord? {
        try db.queryOne(Self.subscriberByKeySQL, [key]).map(Self.subscriberRecord)
    }

    func subscriber(tenantID: String, alias: String) throws -> SubscriberRecord? {
        try db.queryOne(Self.subscriberByAliasSQL, [tenantID, alias]).map(Self.subscriberRecord)
    }

    private static func subscriberRecord(_ row: PostgresRow) throws -> SubscriberRecord {
        SubscriberRecord(
            key: try row.int(0), tenantID: try row.string(1), id: try row.string(2), anonymous: try row.bool(3),
            verified: try row.bool(4), email: try row.optionalString(5), emailSubscribed: try row.bool(6),
            lastSeq: try row.int(7), eventCount: try row.int(8), createdAt: Timestamp(millis: try row.int(9)),
            updatedAt: Timestamp(millis: try row.int(10)))
    }

    func listSubscribers(
        tenantID: String, afterKey: Int64, limit: Int, anonymous: Bool?, verified: Bool?
    ) throws -> [SubscriberRecord] {
        // `$n IS NULL OR …` keeps one prepared statement for every filter combination.
        try db.query(
            """
            SELECT \(Self.subscriberColumns) FROM subscribers
            WHERE tenant_id = $1 AND key > $2 AND ($3::boolean IS NULL OR anonymous = $3::boolean)
                AND ($4::boolean IS NULL OR verified = $4::boolean) AND NOT retired
            ORDER BY key LIMIT $5
            """, [tenantID, afterKey, anonymous, verified, limit]
        ).map(Self.subscriberRecord)
    }

    func listSubscribers(
        tenantID: String, beforeKey: Int64, limit: Int, anonymous: Bool?, verified: Bool?
    ) throws -> [SubscriberRecord] {
        // Newest first for the dashboard: PostgreSQL walks `subscribers_by_tenant` backwards.
        try db.query(
            """
            SELECT \(Self.subscriberColumns) FROM subscribers
            WHERE tenant_id = $1 AND key < $2 AND ($3::boolean IS NULL OR anonymous = $3::boolean)
                AND ($4::boolean IS NULL OR verified = $4::boolean) AND NOT retired
            ORDER BY key DESC LIMIT $5
            """, [tenantID, beforeKey, anonymous, verified, limit]
        ).map(Self.subscriberRecord)
    }

    func subscriberCounts(tenantID: String) throws -> (identified: Int, verified: Int) {
        let row = try db.queryOne(
            """
            SELECT count(*), count(*) FILTER (WHERE verified) FROM subscribers
            WHERE tenant_id = $1 AND NOT anonymous AND NOT retired
            """, [tenantID])
        return (Int(try row?.int(0) ?? 0), Int(try row?.int(1) ?? 0))
    }

    func insertSubscriber(tenantID: String, id: String, anonymous: Bool, now: Timestamp) throws -> SubscriberRecord {
        guard
            let key = try db.queryOne(
                """
                INSERT INTO subscribers (tenant_id, id, anonymous, created_at, updated_at) VALUES ($1, $2, $3, $4, $5)
                RETURNING key
                """, [tenantID, id, anonymous, now.millis, now.millis])?.int(0)
        else { throw PostgresStoreError.undecodable("subscribers.key", "no row returned") }
        try addAlias(tenantID: tenantID, alias: id, key: key)
        return SubscriberRecord(
            key: key, tenantID: tenantID, id: id, anonymous: anonymous, createdAt: now, updatedAt: now)
    }

    func updateSubscriber(_ r: SubscriberRecord) throws {
        try db.execute(
            """
            UPDATE subscribers SET id = $1, anonymous = $2, verified = $3, email = $4, email_subscribed = $5,
                last_seq = $6, event_count = $7, updated_at = $8
            WHERE key = $9
            """,
            [
                r.id, r.anonymous, r.verified, r.email, r.emailSubscribed, r.lastSeq, r.eventCount, r.updatedAt.millis,
                r.key,
            ])
    }

    func addAlias(tenantID: String, alias: String, key: Int64) throws {
        try db.execute(
            "INSERT INTO aliases (tenant_id, alias, subscriber_key) VALUES ($1, $2, $3)", [tenantID, alias, key])
    }

    func aliases(key: Int64, excluding current: String) throws -> [String] {
        try db.query(
            "SELECT alias FROM aliases WHERE subscriber_key = $1 AND alias <> $2 ORDER BY alias", [key, current]
        ).map { try $0.string(0) }
    }

    func aliasCount(key: Int64) throws -> Int {
        Int(try db.queryOne("SELECT count(*) FROM aliases WHERE subscriber_key = $1", [key])?.int(0) ?? 0)
    }

    func reassignAliases(from: Int64, to: Int64) throws {
        try db.execute("UPDATE aliases SET subscriber_key = $1 WHERE subscriber_key = $2", [to, from])
    }

    func deleteSubscriber(key: Int64) throws {
        // Child rows go by ON DELETE CASCADE.
        try db.execute("DELETE FROM subscribers WHERE key = $1", [key])
    }

    func retireSubscriber(key: Int64) throws {
        // As on SQLite: everything but the events goes now; the row stays, renamed so its id is
        // free again, until `purgeRetired(limit:)` has deleted its events.
        try db.execute("DELETE FROM aliases WHERE subscriber_key = $1", [key])
        try db.execute("DELETE FROM attributes WHERE subscriber_key = $1", [key])
        try db.execute("DELETE FROM push_subscriptions WHERE subscriber_key = $1", [key])
        try db.execute("DELETE FROM preferences WHERE subscriber_key = $1", [key])
        try db.execute("DELETE FROM devices WHERE subscriber_key = $1", [key])
        try db.execute(
            "UPDATE subscribers SET retired = true, id = '$retired:' || key, email = NULL WHERE key = $1", [key])
        effects?.retired = true
    }

    /// Deletes up to `limit` events of one retired subscriber, and the row once it has none left.
    /// `SKIP LOCKED`: two servers purging at once take different subscribers instead of queueing.
    /// - Returns: false when no retired subscriber was left to work on.
    func purgeRetired(limit: Int) throws -> Bool {
        guard
            let key = try db.queryOne("SELECT key FROM subscribers WHERE retired LIMIT 1 FOR UPDATE SKIP LOCKED")?
                .int(0)
        else { return false }
        let deleted = try db.execute(
            """
            DELETE FROM events WHERE subscriber_key = $1 AND seq IN (
                SELECT seq FROM events WHERE subscriber_key = $1 ORDER BY seq LIMIT $2)
            """, [key, limit])
        if deleted < limit {
            try db.execute("DELETE FROM subscribers WHERE key = $1 AND retired", [key])
        }
        return true
    }

    // MARK: - Attributes

    func attributes(key: Int64) throws -> [(name: String, entry: AttributeEntry)] {
        try db.query(
            "SELECT name, value, set_by_backend FROM attributes WHERE subscriber_key = $1 ORDER BY name", [key]
        ).map { row -> (name: String, entry: AttributeEntry) in
            let name = try row.string(0)
            let text = try row.string(1)
            guard let value = try? JSONParser.parse(Array(text.utf8), maxDepth: 64) else {
                throw PostgresStoreError.undecodable("attributes.value", "not JSON")
            }
            return (name, AttributeEntry(value: value, setByBackend: try row.bool(2)))
        }
    }

    func writeAttributes(key: Int64, _ changes: [(name: String, entry: AttributeEntry?)]) throws {
        for (name, entry) in changes {
            if let entry {
                try db.execute(
                    """
                    INSERT INTO attributes (subscriber_key, name, value, set_by_backend) VALUES ($1, $2, $3, $4)
                    ON CONFLICT (subscriber_key, name) DO UPDATE SET value = excluded.value,
                        set_by_backend = excluded.set_by_backend
                    """, [key, name, entry.value.jsonString, entry.setByBackend])
            } else {
                try db.execute("DELETE FROM attributes WHERE subscriber_key = $1 AND name = $2", [key, name])
            }
        }
    }

    // MARK: - Push subscriptions, preferences, devices

    func pushSubscriptions(key: Int64) throws -> [PushSubscriptionRecord] {
        try db.query(
            """
            SELECT device_id, token, platform, created_at, updated_at FROM push_subscriptions
            WHERE subscriber_key = $1 ORDER BY updated_at DESC, device_id
            """, [key]
        ).map { row in
            PushSubscriptionRecord(
                deviceID: try row.string(0), token: try row.string(1), platform: try row.string(2),
                createdAt: Timestamp(millis: try row.int(3)), updatedAt: Timestamp(millis: try row.int(4)))
        }
    }

    func upsertPushSubscription(
        tenantID: String, key: Int64, deviceID: String, token: String, platform: String, now: Timestamp
    ) throws {
        // The device belongs to one subscriber at a time: its context leaves the previous owner.
        try db.execute(
            """
            DELETE FROM devices WHERE device_id = $2 AND subscriber_key <> $3 AND subscriber_key =
                (SELECT subscriber_key FROM push_subscriptions WHERE tenant_id = $1 AND device_id = $2)
            """, [tenantID, deviceID, key])
        // The token may be registered under another device id (reinstall): it moves here too.
        try db.execute(
            "DELETE FROM push_subscriptions WHERE tenant_id = $1 AND token = $2 AND device_id <> $3",
            [tenantID, token, deviceID])
        try db.execute(
            """
            INSERT INTO push_subscriptions (tenant_id, device_id, subscriber_key, token, platform, created_at, updated_at)
            VALUES ($1, $2, $3, $4, $5, $6, $7)
            ON CONFLICT (tenant_id, device_id) DO UPDATE SET subscriber_key = excluded.subscriber_key,
                token = excluded.token, platform = excluded.platform, updated_at = excluded.updated_at
            """, [tenantID, deviceID, key, token, platform, now.millis, now.millis])
    }

    func deletePushSubscription(tenantID: String, key: Int64, deviceID: String) throws -> Bool {
        try db.execute(
            "DELETE FROM push_subscriptions WHERE tenant_id = $1 AND device_id = $2 AND subscriber_key = $3",
            [tenantID, deviceID, key]) > 0
    }

    func evictPushSubscriptions(key: Int64, keep: Int) throws -> Int {
        try db.execute(
            """
            DELETE FROM push_subscriptions WHERE subscriber_key = $1 AND device_id IN (
                SELECT device_id FROM push_subscriptions WHERE subscriber_key = $1
                ORDER BY updated_at DESC, device_id OFFSET $2)
            """, [key, keep])
    }

    func movePushSubscriptions(from: Int64, to: Int64) throws {
        try db.execute("UPDATE push_subscriptions SET subscriber_key = $1 WHERE subscriber_key = $2", [to, from])
    }

    func preferences(key: Int64) throws -> [PreferenceRecord] {
        try db.query(
            "SELECT topic, subscribed, updated_at FROM preferences WHERE subscriber_key = $1 ORDER BY topic", [key]
        ).map { row in
            PreferenceRecord(
                topic: try row.string(0), subscribed: try row.bool(1), updatedAt: Timestamp(millis: try row.int(2)))
        }
    }

    func writePreference(key: Int64, _ p: PreferenceRecord) throws {
        try db.execute(
            """
            INSERT INTO preferences (subscriber_key, topic, subscribed, updated_at) VALUES ($1, $2, $3, $4)
            ON CONFLICT (subscriber_key, topic) DO UPDATE SET subscribed = excluded.subscribed,
                updated_at = excluded.updated_at
            """, [key, p.topic, p.subscribed, p.updatedAt.millis])
    }

    func devices(key: Int64) throws -> [DeviceRecord] {
        try db.query(
            """
            SELECT device_id, platform, app_version, os_version, model, locale, time_zone, last_seen_at
            FROM devices WHERE subscriber_key = $1 ORDER BY last_seen_at DESC, device_id
            """, [key]
        ).map { row in
            DeviceRecord(
                deviceID: try row.string(0), platform: try row.optionalString(1), appVersion: try row.optionalString(2),
                osVersion: try row.optionalString(3), model: try row.optionalString(4),
                locale: try row.optionalString(5), timeZone: try row.optionalString(6),
                lastSeenAt: Timestamp(millis: try row.int(7)))
        }
    }

    func upsertDevice(key: Int64, _ d: DeviceRecord) throws {
        // coalesce: a field the device did not report keeps its stored value.
        try db.execute(
            """
            INSERT INTO devices (subscriber_key, device_id, platform, app_version, os_version, model, locale,
                                 time_zone, last_seen_at)
            VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
            ON CONFLICT (subscriber_key, device_id) DO UPDATE SET
                platform = coalesce(excluded.platform, devices.platform),
                app_version = coalesce(excluded.app_version, devices.app_version),
                os_version = coalesce(excluded.os_version, devices.os_version),
                model = coalesce(excluded.model, devices.model),
                locale = coalesce(excluded.locale, devices.locale),
                time_zone = coalesce(excluded.time_zone, devices.time_zone),
                last_seen_at = GREATEST(excluded.last_seen_at, devices.last_seen_at)
            """,
            [
                key, d.deviceID, d.platform, d.appVersion, d.osVersion, d.model, d.locale, d.timeZone,
                d.lastSeenAt.millis,
            ])
    }

    // MARK: - Events

    func insertEvent(key: Int64, seq: Int64, _ e: NewEvent) throws -> Bool {
        try db.execute(
            """
            INSERT INTO events (subscriber_key, seq, client_id, name, timestamp, received_at, properties)
            VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (subscriber_key, client_id) DO NOTHING
            """, [key, seq, e.clientID, e.name, e.timestamp.millis, e.receivedAt.millis, e.propertiesJSON]) > 0
    }

    func copyEvents(from: Int64, to: Int64, afterSeq: Int64) throws -> Int {
        // One statement: numbering by row_number() keeps the source's order and leaves no gaps.
        try db.execute(
            """
            INSERT INTO events (subscriber_key, seq, client_id, name, timestamp, received_at, properties)
            SELECT $1::bigint, $3::bigint + row_number() OVER (ORDER BY seq), client_id, name, timestamp, received_at,
                properties
            FROM events AS source
            WHERE source.subscriber_key = $2 AND NOT EXISTS (
                SELECT 1 FROM events AS mine WHERE mine.subscriber_key = $1 AND mine.client_id = source.client_id)
            ORDER BY seq
            """, [to, from, afterSeq])
    }

    func events(key: Int64, afterSeq: Int64, limit: Int) throws -> [EventRecord] {
        try db.query(
            """
            SELECT seq, client_id, name, timestamp, received_at, properties FROM events
            WHERE subscriber_key = $1 AND seq > $2 ORDER BY seq LIMIT $3
            """, [key, afterSeq, limit]
        ).map { row in
            EventRecord(
                seq: try row.int(0),
                event: NewEvent(
                    clientID: try row.string(1), name: try row.string(2),
                    timestamp: Timestamp(millis: try row.int(3)), receivedAt: Timestamp(millis: try row.int(4)),
                    propertiesJSON: try row.optionalString(5)))
        }
    }
}

/// What a write group did that the store acts on after commit. One per group, shared by the
/// group's contexts on the writer's thread only.
final class GroupEffects {
    /// A tenant, key or workspace changed: other servers' auth caches must drop their entries.
    var authChanged = false
    /// A subscriber was retired: its events wait for the purge.
    var retired = false
}

/// A row the store cannot turn into a record (fails closed, naming the column).
struct PostgresStoreError: Error, CustomStringConvertible {
    var description: String

    static func undecodable(_ column: String, _ why: String) -> PostgresStoreError {
        PostgresStoreError(description: "\(column) does not decode: \(why)")
    }
}

import Identity
import JSON
import Postgres

extension PostgresContext {
    /// One asked id of a batch, with the subscriber key and version of the snapshot the asker
    /// holds, if any.
    struct SnapshotQuestion {
        var tenantID: String
        var id: String
        var held: (key: Int64, version: String)?
    }

    /// What the database says of one question: the version the subscriber has now, and its
    /// snapshot unless that version is the one held (nil: the held snapshot is current).
    struct SnapshotAnswer {
        var version: String
        var snapshot: SubscriberSnapshot?
    }

    /// Answers a batch of snapshot questions. The held snapshots are checked first, by their
    /// subscribers' keys (`currentHeldSQL`); every question that leaves open is answered by
    /// `askedSnapshotsSQL`, which resolves its id and reads its subscriber whole. When every
    /// question holds a current snapshot (most reads, once the cache is warm), or none holds
    /// one, that is one statement and one round trip; otherwise two. A single statement reads
    /// one snapshot of committed data even outside a transaction
    /// (<https://www.postgresql.org/docs/15/transaction-iso.html#XACT-READ-COMMITTED>), and both
    /// begin after every question of the batch was asked, so each answer includes every write
    /// committed before it was asked.
    /// - Returns: the answers by the questions' index; an id that reaches no one has none.
    func snapshots(answering questions: [SnapshotQuestion]) throws -> [Int: SnapshotAnswer] {
        var answers = try currentHeldSnapshots(questions)
        let open = questions.indices.filter { answers[$0] == nil }
        guard !open.isEmpty else { return answers }
        // A held snapshot left open here is not current, and cannot be again: a version carries
        // the row's `xmin`, which only moves forward. So every row read now is read whole.
        let result = try db.query(
            Self.askedSnapshotsSQL,
            [
                PostgresValue.textArray(open.map { questions[$0].tenantID }),
                PostgresValue.textArray(open.map { questions[$0].id }),
            ])
        for row in result {
            let position = Int(try row.int(0)) - 1
            guard open.indices.contains(position) else { continue }
            let record = SubscriberRecord(
                key: try row.int(2), tenantID: try row.string(3), id: try row.string(4), anonymous: try row.bool(5),
                verified: try row.bool(6), email: try row.optionalString(7), emailSubscribed: try row.bool(8),
                lastSeq: try row.int(9), eventCount: try row.int(10), createdAt: Timestamp(millis: try row.int(11)),
                updatedAt: Timestamp(millis: try row.int(12)))
            answers[open[position]] = SnapshotAnswer(
                version: Self.version(key: record.key, xmin: try row.int(1)),
                snapshot: try Self.snapshot(record, children: row, from: 13))
        }
        return answers
    }

    /// The questions whose held snapshot is current, answered (by the questions' index).
    ///
    /// Looked up by the held subscriber's key, not by the asked id: the id's alias row stays
    /// unread. That is sound because migration 0003's triggers renew the version of every
    /// subscriber an alias row is inserted for, moved from or to, or deleted from: while the
    /// held subscriber's version is unchanged, the asked id still reaches it.
    private func currentHeldSnapshots(_ questions: [SnapshotQuestion]) throws -> [Int: SnapshotAnswer] {
        let held = questions.indices.compactMap { index in
            questions[index].held.map { (index: index, key: $0.key, version: $0.version) }
        }
        guard !held.isEmpty else { return [:] }
        let result = try db.query(Self.currentHeldSQL, [PostgresValue.integerArray(held.map(\.key))])
        var versions: [Int64: String] = [:]
        for row in result {
            let key = try row.int(0)
            versions[key] = Self.version(key: key, xmin: try row.int(1))
        }
        var answers: [Int: SnapshotAnswer] = [:]
        for question in held where versions[question.key] == question.version {
            answers[question.index] = SnapshotAnswer(version: question.version, snapshot: nil)
        }
        return answers
    }

    /// The snapshots of a page of records in one statement for the whole page (the children of
    /// every key as JSON arrays), in the records' order.
    func snapshots(of records: [SubscriberRecord]) throws -> [SubscriberSnapshot] {
        guard !records.isEmpty else { return [] }
        var byKey: [Int64: PostgresRow] = [:]
        let result = try db.query(Self.snapshotsSQL, [PostgresValue.integerArray(records.map(\.key))])
        for row in result { byKey[try row.int(0)] = row }
        return try records.map { record in
            guard let row = byKey[record.key] else {
                return SubscriberSnapshot(
                    record: record, attributes: [], aliases: [], pushSubscriptions: [], preferences: [], devices: [])
            }
            return try Self.snapshot(record, children: row, from: 1)
        }
    }

    /// A snapshot from the five JSON columns that start at `first`.
    private static func snapshot(_ record: SubscriberRecord, children row: PostgresRow, from first: Int) throws
        -> SubscriberSnapshot
    {
        let attributes = try Self.tuples(row, first, "attributes").map {
            item -> (name: String, entry: AttributeEntry) in
            let text = try Self.string(item, 1, "attributes.value")
            guard let value = try? JSONParser.parse(Array(text.utf8), maxDepth: 64) else {
                throw PostgresStoreError.undecodable("attributes.value", "not JSON")
            }
            return (
                try Self.string(item, 0, "attributes.name"),
                AttributeEntry(value: value, setByBackend: try Self.bool(item, 2, "attributes.set_by_backend"))
            )
        }
        let aliases = try Self.json(row, first + 1, "aliases").map { value -> String in
            guard let alias = value.stringValue else {
                throw PostgresStoreError.undecodable("aliases.alias", "not text")
            }
            return alias
        }
        let push = try Self.tuples(row, first + 2, "push_subscriptions").map { item in
            PushSubscriptionRecord(
                deviceID: try Self.string(item, 0, "push_subscriptions.device_id"),
                token: try Self.string(item, 1, "push_subscriptions.token"),
                platform: try Self.string(item, 2, "push_subscriptions.platform"),
                createdAt: Timestamp(millis: try Self.int(item, 3, "push_subscriptions.created_at")),
                updatedAt: Timestamp(millis: try Self.int(item, 4, "push_subscriptions.updated_at")))
        }
        let preferences = try Self.tuples(row, first + 3, "preferences").map { item in
            PreferenceRecord(
                topic: try Self.string(item, 0, "preferences.topic"),
                subscribed: try Self.bool(item, 1, "preferences.subscribed"),
                updatedAt: Timestamp(millis: try Self.int(item, 2, "preferences.updated_at")))
        }
        let devices = try Self.tuples(row, first + 4, "devices").map { item in
            DeviceRecord(
                deviceID: try Self.string(item, 0, "devices.device_id"),
                platform: try Self.optionalString(item, 1, "devices.platform"),
                appVersion: try Self.optionalString(item, 2, "devices.app_version"),
                osVersion: try Self.optionalString(item, 3, "devices.os_version"),
                model: try Self.optionalString(item, 4, "devices.model"),
                locale: try Self.optionalString(item, 5, "devices.locale"),
                timeZone: try Self.optionalString(item, 6, "devices.time_zone"),
                lastSeenAt: Timestamp(millis: try Self.int(item, 7, "devices.last_seen_at")))
        }
        return SubscriberSnapshot(
            record: record, attributes: attributes, aliases: aliases.filter { $0 != record.id },
            pushSubscriptions: push, preferences: preferences, devices: devices)
    }

    /// The children of subscriber `s` as five JSON arrays, in the orders of the per-table reads.
    /// The current id is filtered out of the aliases in Swift (the batch query has no one id).
    static let childrenSQL = """
            (SELECT json_agg(json_build_array(name, value, set_by_backend) ORDER BY name)
                FROM attributes WHERE subscriber_key = s.key) AS attributes,
            (SELECT json_agg(alias ORDER BY alias) FROM aliases WHERE subscriber_key = s.key) AS aliases,
            (SELECT json_agg(json_build_array(device_id, token, platform, created_at, updated_at)
                    ORDER BY updated_at DESC, device_id)
                FROM push_subscriptions WHERE subscriber_key = s.key) AS push_subscriptions,
            (SELECT json_agg(json_build_array(topic, subscribed, updated_at) ORDER BY topic)
                FROM preferences WHERE subscriber_key = s.key) AS preferences,
            (SELECT json_agg(json_build_array(device_id, platform, app_version, os_version, model, locale, time_zone,
                    last_seen_at) ORDER BY last_seen_at DESC, device_id)
                FROM devices WHERE subscriber_key = s.key) AS devices
        """

    /// A subscriber's version, `key:xmin`: its key and its row's `xmin`, which every change to
    /// the row, or (through the triggers of migration 0003) to its children, replaces. Made here
    /// from the `xmin` both statements return, so the format is written once.
    static func version(key: Int64, xmin: Int64) -> String { "\(key):\(xmin)" }

    /// Held snapshots' subscriber keys in, each live one's key and `xmin` out; the versions are
    /// compared here (`version(key:xmin:)`). pgbench, 17 held snapshots a statement: 43.4k–44.2k
    /// statements a second against 19.3k–20.4k for the whole statement, whose alias lookup by
    /// text key and children were most of its cost. Returning `xmin` rather than comparing
    /// versions in the statement (an `unnest` of keys and held versions `WITH ORDINALITY`, each
    /// version built as text) took a further fifth or so off: 15 held, 3 alternated runs,
    /// 56.5k–58.0k → 72.1k–77.2k statements a second.
    static let currentHeldSQL = """
        SELECT s.key, s.xmin FROM subscribers AS s WHERE s.key = ANY($1::bigint[]) AND NOT s.retired
        """

    /// Asked ids in (tenants and ids), one row per id that reaches a live subscriber out: its
    /// question's 1-based index, its row's `xmin` (for its version), its row and its children.
    static let askedSnapshotsSQL = """
        SELECT q.i, s.xmin, s.key, s.tenant_id, s.id, s.anonymous, s.verified, s.email, s.email_subscribed,
            s.last_seq, s.event_count, s.created_at, s.updated_at,
        \(childrenSQL)
        FROM unnest($1::text[], $2::text[]) WITH ORDINALITY AS q(tenant_id, alias, i)
        JOIN aliases AS a ON a.tenant_id = q.tenant_id AND a.alias = q.alias
        JOIN subscribers AS s ON s.key = a.subscriber_key
        WHERE NOT s.retired
        """

    /// The children of a page of subscribers by key.
    static let snapshotsSQL = """
        SELECT s.key,
        \(childrenSQL)
        FROM subscribers AS s WHERE s.key = ANY($1::bigint[])
        """

    // MARK: Decoding the JSON columns (strictly: a wrong shape throws, naming the table)

    private static func json(_ row: PostgresRow, _ column: Int, _ table: String) throws -> [JSONValue] {
        guard let text = try row.optionalString(column) else { return [] }  // json_agg of no rows is NULL
        guard let items = (try? JSONParser.parse(Array(text.utf8), maxDepth: 64))?.arrayValue else {
            throw PostgresStoreError.undecodable(table, "not a JSON array")
        }
        return items
    }

    private static func tuples(_ row: PostgresRow, _ column: Int, _ table: String) throws -> [[JSONValue]] {
        try json(row, column, table).map { item in
            guard let fields = item.arrayValue else { throw PostgresStoreError.undecodable(table, "not a row") }
            return fields
        }
    }

    private static func field(_ item: [JSONValue], _ index: Int, _ column: String) throws -> JSONValue {
        guard index < item.count else { throw PostgresStoreError.undecodable(column, "missing") }
        return item[index]
    }

    private static func string(_ item: [JSONValue], _ index: Int, _ column: String) throws -> String {
        guard let value = try field(item, index, column).stringValue else {
            throw PostgresStoreError.undecodable(column, "not text")
        }
        return value
    }

    private static func optionalString(_ item: [JSONValue], _ index: Int, _ column: String) throws -> String? {
        let value = try field(item, index, column)
        if value.isNull { return nil }
        guard let text = value.stringValue else { throw PostgresStoreError.undecodable(column, "not text") }
        return text
    }

    private static func int(_ item: [JSONValue], _ index: Int, _ column: String) throws -> Int64 {
        guard let value = try field(item, index, column).intValue else {
            throw PostgresStoreError.undecodable(column, "not an integer")
        }
        return value
    }

    private static func bool(_ item: [JSONValue], _ index: Int, _ column: String) throws -> Bool {
        guard let value = try field(item, index, column).boolValue else {
            throw PostgresStoreError.undecodable(column, "not a boolean")
        }
        return value
    }
}

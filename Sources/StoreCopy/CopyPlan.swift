// MARK: - Values

/// One column value in transit between two engines: the common ground of SQLite's storage
/// classes and PostgreSQL's text protocol for the columns a store has.
package enum CopyValue: Sendable, Hashable {
    /// SQL `NULL`.
    case null
    /// An integer; booleans travel as 0 or 1.
    case integer(Int64)
    /// Text; JSON columns travel as their JSON text.
    case text(String)
}

// MARK: - Tables

/// One column of a copied table, with the kind the engines need to read and bind it.
package struct CopyColumn: Sendable, Hashable {
    /// How a column is typed: SQLite keeps all three as INTEGER/TEXT, PostgreSQL may use
    /// `boolean` and `jsonb`, so its reader and writer cast by kind.
    package enum Kind: Sendable, Hashable {
        case integer
        case boolean
        case text
        case json
    }

    /// The column name, the same in both schemas.
    package var name: String
    /// Its kind.
    package var kind: Kind

    /// A column.
    package init(_ name: String, _ kind: Kind) {
        self.name = name
        self.kind = kind
    }
}

/// One table of a store as `buzzkit copy` moves it: which columns, in which order it is paged,
/// and which rows count.
package struct CopyTable: Sendable, Hashable {
    /// The name printed per kind ("push subscriptions").
    package var kind: String
    /// The table name, the same in both schemas.
    package var name: String
    /// The copied columns; columns left out take their default in the target.
    package var columns: [CopyColumn]
    /// The primary key, a prefix-free subset of `columns`: rows are read in this order, a batch
    /// at a time after the last key seen (keyset pagination, so no batch costs an OFFSET scan).
    package var key: [String]
    /// Only rows of subscribers that are not retired: the subscriber itself (`subscribers`) or
    /// the one `subscriber_key` names.
    package var liveSubscribersOnly = false
    /// Per engine: the sequence whose next value must pass the copied keys (PostgreSQL only).
    package var serialColumn: String?
    /// A table that older schemas lack: skipped when the source has none or an empty one the
    /// target lacks; rows the target has no table for refuse the copy.
    package var optional = false

    /// The indices of the key columns in `columns`.
    package var keyIndices: [Int] {
        key.map { name in columns.firstIndex { $0.name == name }! }
    }
}

/// What `buzzkit copy` moves (API.md §11), parents before children so foreign keys hold at every
/// insert. Not copied: idempotency records, webhook deliveries (SQLite's waiting outbox rows
/// included) and the 24-hour counts, which the contract leaves behind, and retired subscribers
/// with their events, which nothing reaches and the source was about to purge.
package enum CopyPlan {
    /// The tables in copy order.
    package static let tables: [CopyTable] = [
        CopyTable(
            kind: "workspaces", name: "workspaces",
            columns: [.init("id", .text), .init("name", .text), .init("created_at", .integer)], key: ["id"]),
        CopyTable(
            kind: "tenants", name: "tenants",
            columns: [
                .init("id", .text), .init("workspace_id", .text), .init("name", .text), .init("settings", .json),
                .init("identity_secret", .text), .init("previous_secret", .text),
                .init("previous_expires_at", .integer), .init("created_at", .integer),
            ], key: ["id"]),
        // Keys are copied as their hashes: the same keys authenticate against the target.
        CopyTable(
            kind: "keys", name: "api_keys",
            columns: [
                .init("hash", .text), .init("id", .text), .init("kind", .text), .init("workspace_id", .text),
                .init("tenant_id", .text), .init("display_prefix", .text), .init("created_at", .integer),
                .init("revoked_at", .integer),
            ], key: ["hash"]),
        CopyTable(
            kind: "subscribers", name: "subscribers",
            columns: [
                .init("key", .integer), .init("tenant_id", .text), .init("id", .text), .init("anonymous", .boolean),
                .init("verified", .boolean), .init("email", .text), .init("email_subscribed", .boolean),
                .init("last_seq", .integer), .init("event_count", .integer), .init("created_at", .integer),
                .init("updated_at", .integer),
            ], key: ["key"], liveSubscribersOnly: true, serialColumn: "key"),
        CopyTable(
            kind: "aliases", name: "aliases",
            columns: [.init("tenant_id", .text), .init("alias", .text), .init("subscriber_key", .integer)],
            key: ["tenant_id", "alias"], liveSubscribersOnly: true),
        CopyTable(
            kind: "attributes", name: "attributes",
            columns: [
                .init("subscriber_key", .integer), .init("name", .text), .init("value", .json),
                .init("set_by_backend", .boolean),
            ], key: ["subscriber_key", "name"], liveSubscribersOnly: true),
        CopyTable(
            kind: "events", name: "events",
            columns: [
                .init("subscriber_key", .integer), .init("seq", .integer), .init("client_id", .text),
                .init("name", .text), .init("timestamp", .integer), .init("received_at", .integer),
                .init("properties", .json),
            ], key: ["subscriber_key", "seq"], liveSubscribersOnly: true),
        CopyTable(
            kind: "push subscriptions", name: "push_subscriptions",
            columns: [
                .init("tenant_id", .text), .init("device_id", .text), .init("subscriber_key", .integer),
                .init("token", .text), .init("platform", .text), .init("created_at", .integer),
                .init("updated_at", .integer),
            ], key: ["tenant_id", "device_id"], liveSubscribersOnly: true),
        CopyTable(
            kind: "preferences", name: "preferences",
            columns: [
                .init("subscriber_key", .integer), .init("topic", .text), .init("subscribed", .boolean),
                .init("updated_at", .integer),
            ], key: ["subscriber_key", "topic"], liveSubscribersOnly: true),
        CopyTable(
            kind: "devices", name: "devices",
            columns: [
                .init("subscriber_key", .integer), .init("device_id", .text), .init("platform", .text),
                .init("app_version", .text), .init("os_version", .text), .init("model", .text),
                .init("locale", .text), .init("time_zone", .text), .init("last_seen_at", .integer),
            ], key: ["subscriber_key", "device_id"], liveSubscribersOnly: true),
        // Signing secrets travel as they are: the receivers keep verifying after the move.
        CopyTable(
            kind: "webhook endpoints", name: "webhook_endpoints",
            columns: [
                .init("key", .integer), .init("id", .text), .init("tenant_id", .text), .init("url", .text),
                .init("events", .text), .init("description", .text), .init("secret", .text),
                .init("enabled", .boolean), .init("created_at", .integer),
            ], key: ["key"], serialColumn: "key", optional: true),
    ]
}

// MARK: - SQL shared by both engines

extension CopyTable {
    /// The table joins `subscribers` (as `s`) to see whether the row's subscriber is retired.
    var joinsSubscriber: Bool { liveSubscribersOnly && name != "subscribers" }

    /// `FROM …` with the subscriber join when the filter needs it; both engines accept the text.
    func fromClause(retiredColumn: Bool) -> String {
        var from = "FROM \(name) t"
        if joinsSubscriber && retiredColumn { from += " JOIN subscribers s ON s.key = t.subscriber_key" }
        return from
    }

    /// The row filter as a `WHERE` term. `CAST(… AS BOOLEAN)` reads a 0/1 integer (SQLite) and a
    /// boolean (PostgreSQL) alike; a schema without the column retires nothing.
    func filterCondition(retiredColumn: Bool) -> String {
        guard liveSubscribersOnly && retiredColumn else { return "1 = 1" }
        return "NOT CAST(\(name == "subscribers" ? "t" : "s").retired AS BOOLEAN)"
    }

    /// `(t.a, t.b) > (p1, p2)` for the keyset, given each placeholder's text.
    func keysetCondition(placeholders: [String]) -> String {
        "(" + key.map { "t.\($0)" }.joined(separator: ", ") + ") > (" + placeholders.joined(separator: ", ") + ")"
    }

    /// `t.a, t.b` in key order.
    var orderBy: String { key.map { "t.\($0)" }.joined(separator: ", ") }
}

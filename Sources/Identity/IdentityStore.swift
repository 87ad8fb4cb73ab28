/// The storage seam: everything the domain needs from a database, and nothing of SQL.
/// `Storage` implements it on SQLite, `PostgresStorage` on PostgreSQL (see also `StoreLifecycle`).
///
/// Reads run on the caller's thread against a consistent snapshot. Writes are queued to the
/// store's writer and committed in groups: `completion` runs once the write is durable.
///
/// Class-bound: each request copies the store into its context, and a class existential is one
/// reference to retain, where any other existential is copied through its value witnesses.
package protocol IdentityStore: AnyObject, Sendable {
    func read<T>(_ body: (any IdentityReadContext) throws -> T) throws -> T
    /// The snapshot of the subscriber `id` (any id it ever had) reaches in this tenant, or nil.
    /// A store may answer from a cache, but never with anything older than the last write it acknowledged.
    func snapshot(tenantID: String, id: String) throws -> SubscriberSnapshot?
    /// `snapshot(tenantID:id:)` for a caller that must not wait (an event loop): `completion`
    /// runs once it is read, on any thread, perhaps this one before the call returns.
    func snapshot(
        tenantID: String, id: String, completion: @escaping @Sendable (Result<SubscriberSnapshot?, any Error>) -> Void)
    /// The snapshot `id` reaches if the store can answer it now from memory, with no read and
    /// nothing to verify; nil means ask `snapshot`. Lets a cached GET skip the completion
    /// closure and its captures (`Application.dispatch`).
    func cachedSnapshot(tenantID: String, id: String) -> SubscriberSnapshot?
    /// The kept rendering of what `cachedSnapshot` would answer, when the store has one in
    /// memory that needs no check (`SnapshotCache.rendering`): for callers with nothing to
    /// check of the snapshot itself.
    func cachedRendering(tenantID: String, id: String) -> CachedRendering?
    func write<T: Sendable>(
        _ body: @escaping @Sendable (any IdentityWriteContext) throws -> T,
        completion: @escaping @Sendable (Result<T, any Error>) -> Void)
}

extension IdentityStore {
    /// `snapshot(tenantID:id:)` from one read transaction, uncached.
    package func readSnapshot(tenantID: String, id: String) throws -> SubscriberSnapshot? {
        try read { ctx in
            try ctx.subscriber(tenantID: tenantID, alias: id).map { try ctx.snapshot(of: $0) }
        }
    }

    package func snapshot(tenantID: String, id: String) throws -> SubscriberSnapshot? {
        try readSnapshot(tenantID: tenantID, id: id)
    }

    /// None by default: a store whose cached entries must be checked first (PostgreSQL) says so.
    package func cachedSnapshot(tenantID: String, id: String) -> SubscriberSnapshot? { nil }

    /// None by default, as `cachedSnapshot`.
    package func cachedRendering(tenantID: String, id: String) -> CachedRendering? { nil }

    /// Reads on the caller's thread: right for a store whose reads never wait on a server.
    package func snapshot(
        tenantID: String, id: String, completion: @escaping @Sendable (Result<SubscriberSnapshot?, any Error>) -> Void
    ) {
        completion(Result { try snapshot(tenantID: tenantID, id: id) })
    }
}

/// Lookups, each scoped by tenant or by a subscriber key that was resolved within a tenant.
package protocol IdentityReadContext: WebhookReadContext, IdempotencyReadContext {
    func tenant(id: String) throws -> TenantRecord?
    /// The key whose SHA-256 (hex) is `hash`, revoked or not.
    func apiKey(hash: String) throws -> APIKeyRecord?
    func apiKeys(workspaceID: String, tenantID: String?) throws -> [APIKeyRecord]
    func workspaceExists(id: String) throws -> Bool
    /// The oldest workspace, for offline tenant creation.
    func firstWorkspaceID() throws -> String?

    /// The subscriber that `alias` (any id it ever had) reaches in this tenant.
    func subscriberKey(tenantID: String, alias: String) throws -> Int64?
    func subscriber(key: Int64) throws -> SubscriberRecord?
    /// The subscriber that `alias` reaches in this tenant: `subscriberKey` then `subscriber(key:)`
    /// in one lookup.
    func subscriber(tenantID: String, alias: String) throws -> SubscriberRecord?
    func attributes(key: Int64) throws -> [(name: String, entry: AttributeEntry)]
    /// Every id of the subscriber except its current one, oldest first.
    func aliases(key: Int64, excluding current: String) throws -> [String]
    /// How many ids the subscriber has, its current one included (the tenant's `maxAliases`).
    func aliasCount(key: Int64) throws -> Int
    /// The full snapshot of `record` (API.md §4). (A default reads each part on its own; a store
    /// should read them together.)
    func snapshot(of record: SubscriberRecord) throws -> SubscriberSnapshot
    /// The full snapshots of `records` (API.md §4), in their order, read in a few queries for the
    /// whole batch (one per child table) rather than a few per record: a page of the list.
    func snapshots(of records: [SubscriberRecord]) throws -> [SubscriberSnapshot]
    func pushSubscriptions(key: Int64) throws -> [PushSubscriptionRecord]
    func preferences(key: Int64) throws -> [PreferenceRecord]
    func devices(key: Int64) throws -> [DeviceRecord]
    /// Events with `seq > afterSeq`, in sequence order.
    func events(key: Int64, afterSeq: Int64, limit: Int) throws -> [EventRecord]
    /// Subscribers in creation order with `key > afterKey`.
    func listSubscribers(
        tenantID: String, afterKey: Int64, limit: Int, anonymous: Bool?, verified: Bool?
    ) throws -> [SubscriberRecord]
    /// Subscribers newest first with `key < beforeKey` (`Int64.max` for the first page), so an
    /// operator sees who just arrived; a page reads about `limit` rows, whatever the filter.
    func listSubscribers(
        tenantID: String, beforeKey: Int64, limit: Int, anonymous: Bool?, verified: Bool?
    ) throws -> [SubscriberRecord]
    /// Identified and verified subscriber counts, for the tenant settings view.
    func subscriberCounts(tenantID: String) throws -> (identified: Int, verified: Int)
}

/// Changes, made inside one write transaction (a savepoint of a group commit).
package protocol IdentityWriteContext: IdentityReadContext, WebhookWriteContext, IdempotencyWriteContext {
    func insertWorkspace(id: String, name: String, now: Timestamp) throws
    func insertTenant(_ tenant: TenantRecord) throws
    func updateTenant(_ tenant: TenantRecord) throws
    func insertAPIKey(_ key: APIKeyRecord, hash: String) throws
    /// Returns false when no such unrevoked key exists in this scope.
    func revokeAPIKey(id: String, workspaceID: String, tenantID: String?, now: Timestamp) throws -> Bool

    /// Creates a subscriber and the alias row for its id.
    func insertSubscriber(tenantID: String, id: String, anonymous: Bool, now: Timestamp) throws -> SubscriberRecord
    /// Writes every column of the record back (key and tenant never change).
    func updateSubscriber(_ record: SubscriberRecord) throws
    func addAlias(tenantID: String, alias: String, key: Int64) throws
    func reassignAliases(from: Int64, to: Int64) throws
    /// Sets (non-nil) or removes (nil) attributes.
    func writeAttributes(key: Int64, _ changes: [(name: String, entry: AttributeEntry?)]) throws

    /// Registers a device on this subscriber, taking the device id and the token from whoever had them.
    func upsertPushSubscription(
        tenantID: String, key: Int64, deviceID: String, token: String, platform: String, now: Timestamp) throws
    func deletePushSubscription(tenantID: String, key: Int64, deviceID: String) throws -> Bool
    /// Keeps the `keep` most recently seen subscriptions, deleting the rest; returns how many went.
    func evictPushSubscriptions(key: Int64, keep: Int) throws -> Int
    func movePushSubscriptions(from: Int64, to: Int64) throws

    func writePreference(key: Int64, _ preference: PreferenceRecord) throws
    /// Merges a device report: non-nil fields overwrite, nil fields keep what was stored.
    func upsertDevice(key: Int64, _ device: DeviceRecord) throws

    /// Stores the event as `seq` unless this subscriber already has its client id (returns false).
    func insertEvent(key: Int64, seq: Int64, _ event: NewEvent) throws -> Bool
    /// Stores `events` in order, numbering the stored ones from `afterSeq + 1` and skipping
    /// client ids this subscriber already has. Returns how many were stored. (A default runs
    /// `insertEvent` per event; a store may do the batch in one go.)
    func insertEvents(key: Int64, afterSeq: Int64, _ events: [NewEvent]) throws -> Int
    /// Appends the source's events to the target's timeline after `afterSeq`, in their order,
    /// skipping client ids the target already has. Returns how many were copied.
    func copyEvents(from: Int64, to: Int64, afterSeq: Int64) throws -> Int

    /// Erases the subscriber: row, aliases, attributes, events, subscriptions, preferences, devices.
    func deleteSubscriber(key: Int64) throws
    /// The snapshot of `record` as this transaction leaves it, when the store can read it here
    /// for little; nil means the answer reads it after the commit, on a reader. (A default
    /// answers nil.)
    func snapshotIfCheap(of record: SubscriberRecord) throws -> SubscriberSnapshot?

    /// Retires a subscriber whose data was just folded into another: everything of it is erased
    /// or unreachable once this returns (no alias or id resolves to it, no list shows it), but
    /// its events may be deleted later, in small batches, by the store. An absorb would
    /// otherwise delete thousands of events inside the merge's own transaction.
    func retireSubscriber(key: Int64) throws
}

extension IdentityWriteContext {
    /// Nil: the answer's snapshot is read after the commit.
    package func snapshotIfCheap(of record: SubscriberRecord) throws -> SubscriberSnapshot? { nil }

    /// One `insertEvent` per event; a store should bind one statement for the whole batch.
    package func insertEvents(key: Int64, afterSeq: Int64, _ events: [NewEvent]) throws -> Int {
        var stored = 0
        for event in events where try insertEvent(key: key, seq: afterSeq + Int64(stored) + 1, event) {
            stored += 1
        }
        return stored
    }
}

extension IdentityReadContext {
    /// Counts through `aliases`; a store should answer from an index instead.
    package func aliasCount(key: Int64) throws -> Int {
        guard let record = try subscriber(key: key) else { return 0 }
        return try aliases(key: key, excluding: record.id).count + 1
    }

    /// A read per part.
    package func snapshot(of record: SubscriberRecord) throws -> SubscriberSnapshot {
        try SubscriberSnapshot.load(record, from: self)
    }

    /// One snapshot at a time; a store should batch (see the requirement).
    package func snapshots(of records: [SubscriberRecord]) throws -> [SubscriberSnapshot] {
        try records.map { try snapshot(of: $0) }
    }
}

import Identity
import Synchronization

/// Recently read subscriber snapshots, by the id they were asked for, so a repeated
/// `GET /v1/subscribers/{id}` costs no reader transaction.
///
/// Coherence comes from the single writer: temp triggers on its connection report the key of
/// every subscriber whose row or child rows a statement changes (`SubscriberChanges`), and when a
/// group's transaction ends, before any of its callers is answered, `invalidate` drops those
/// subscribers and moves the epoch. A read that missed notes the epoch before its transaction and
/// stores what it found only if the epoch has not moved since, so a snapshot read before a commit
/// can never be stored after it. Aliases need no extra care: moving or deleting an alias row
/// changes the subscribers on both sides, which drops every cached id that reached them.
final class SnapshotCache: Sendable {
    private struct Entry {
        var snapshot: SubscriberSnapshot
        var cost: Int
    }
    private struct AskedID: Hashable {
        var tenantID: String
        var id: String
    }
    private struct State {
        var epoch: UInt64 = 0
        var entries: [AskedID: Entry] = [:]
        /// Subscriber key → the ids cached for it, to drop them together.
        var askedIDs: [Int64: [AskedID]] = [:]
        var cost = 0
        /// Ids in the order they were stored, oldest from `evictFrom` on: what goes first past the
        /// budget. (Evicting `entries.first` instead emptied the dictionary's low buckets and
        /// packed its high ones, so lookups probed ever longer runs of full buckets: identify
        /// fell from 9k to 1.7k a second once the cache was full.) Ids dropped by `invalidate`
        /// stay here until reached or compacted away.
        var storedOrder: [AskedID] = []
        var evictFrom = 0
    }
    private let state = Mutex(State())
    /// Rough bytes held, snapshots and bookkeeping; past it, the oldest entries go.
    let budget: Int

    init(budgetBytes: Int) { budget = budgetBytes }

    /// The cached snapshot `id` reaches in this tenant, or the epoch to pass to `store` after
    /// reading it from the database.
    func lookup(tenantID: String, id: String) -> (snapshot: SubscriberSnapshot?, epoch: UInt64) {
        state.withLock { s in (s.entries[AskedID(tenantID: tenantID, id: id)]?.snapshot, s.epoch) }
    }

    /// Keeps what a read that began at `epoch` found, unless a write ended since.
    func store(_ snapshot: SubscriberSnapshot, tenantID: String, id: String, epoch: UInt64) {
        guard budget > 0 else { return }
        let asked = AskedID(tenantID: tenantID, id: id)
        let cost = Self.cost(of: snapshot, asked: asked)
        state.withLock { s in
            guard s.epoch == epoch, s.entries[asked] == nil else { return }
            while s.cost + cost > budget, s.evictFrom < s.storedOrder.count {
                Self.remove(s.storedOrder[s.evictFrom], in: &s)
                s.evictFrom += 1
            }
            s.entries[asked] = Entry(snapshot: snapshot, cost: cost)
            s.askedIDs[snapshot.record.key, default: []].append(asked)
            s.cost += cost
            s.storedOrder.append(asked)
            Self.compactOrder(&s)
        }
    }

    /// Keeps `storedOrder` within a few times the entries held: drops what was evicted, and
    /// what `invalidate` dropped, when they outnumber the rest.
    private static func compactOrder(_ s: inout State) {
        let waste = s.storedOrder.count - s.entries.count
        guard waste > 1024, waste > s.entries.count else { return }
        s.storedOrder = s.storedOrder[s.evictFrom...].filter { s.entries[$0] != nil }
        s.evictFrom = 0
    }

    /// Drops every id cached for these subscribers and moves the epoch. Runs on the writer
    /// thread after each group's transaction ended.
    func invalidate(_ keys: Set<Int64>) {
        state.withLock { s in
            s.epoch &+= 1
            for key in keys {
                guard let asked = s.askedIDs.removeValue(forKey: key) else { continue }
                for id in asked {
                    if let entry = s.entries.removeValue(forKey: id) { s.cost -= entry.cost }
                }
            }
        }
    }

    /// Entries held now (tests, metrics).
    var count: Int { state.withLock { $0.entries.count } }

    private static func remove(_ asked: AskedID, in s: inout State) {
        guard let entry = s.entries.removeValue(forKey: asked) else { return }
        s.cost -= entry.cost
        let key = entry.snapshot.record.key
        s.askedIDs[key]?.removeAll { $0 == asked }
        if s.askedIDs[key]?.isEmpty == true { s.askedIDs[key] = nil }
    }

    /// An estimate, not a measurement: string bytes plus a fixed share per record.
    private static func cost(of snapshot: SubscriberSnapshot, asked: AskedID) -> Int {
        let r = snapshot.record
        var bytes = 384 + asked.tenantID.utf8.count + asked.id.utf8.count + r.id.utf8.count + (r.email?.utf8.count ?? 0)
        bytes += snapshot.attributes.count * 256 + snapshot.aliases.reduce(0) { $0 + 48 + $1.utf8.count }
        bytes += snapshot.pushSubscriptions.reduce(0) { $0 + 160 + $1.token.utf8.count }
        bytes += (snapshot.preferences.count + snapshot.devices.count) * 160
        return bytes
    }
}

/// The keys of subscribers the writer's connection changed since the last `take()`, filled by
/// temp triggers through an SQL function. Only the writer thread touches it.
final class SubscriberChanges: @unchecked Sendable {
    private var keys: Set<Int64> = []

    static let functionName = "buzzkit_subscriber_changed"

    /// Temp triggers live on the writer's connection only and are never part of the schema:
    /// every table a snapshot is read from reports the subscriber it belongs to.
    static let triggersSQL: String = {
        let tables = [
            ("subscribers", "key"), ("aliases", "subscriber_key"), ("attributes", "subscriber_key"),
            ("push_subscriptions", "subscriber_key"), ("preferences", "subscriber_key"), ("devices", "subscriber_key"),
        ]
        return tables.map { table, column in
            """
            CREATE TEMP TRIGGER IF NOT EXISTS \(table)_changed_insert AFTER INSERT ON main.\(table)
                BEGIN SELECT \(functionName)(NEW.\(column)); END;
            CREATE TEMP TRIGGER IF NOT EXISTS \(table)_changed_update AFTER UPDATE ON main.\(table)
                BEGIN SELECT \(functionName)(OLD.\(column)), \(functionName)(NEW.\(column)); END;
            CREATE TEMP TRIGGER IF NOT EXISTS \(table)_changed_delete AFTER DELETE ON main.\(table)
                BEGIN SELECT \(functionName)(OLD.\(column)); END;
            """
        }.joined(separator: "\n")
    }()

    func record(_ key: Int64) { keys.insert(key) }

    func take() -> Set<Int64> {
        defer { keys.removeAll(keepingCapacity: true) }
        return keys
    }
}

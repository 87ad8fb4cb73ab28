import StringBytes
import Synchronization

/// Recently read subscriber snapshots, by the id they were asked for, so a repeated
/// `GET /v1/subscribers/{id}` costs no reader transaction.
///
/// On PostgreSQL every hit is checked against the database first: an entry keeps the version its
/// subscriber row had when it was read (see `PostgresSnapshotReader`), and nothing is invalidated.
///
/// On SQLite, coherence comes from the single writer: temp triggers on its connection report the key of
/// every subscriber whose row or child rows a statement changes (`SubscriberChanges`), and when a
/// group's transaction ends, before any of its callers is answered, `invalidate` drops those
/// subscribers and moves the epoch. A read that missed notes the epoch before its transaction and
/// stores what it found only if the epoch has not moved since, so a snapshot read before a commit
/// can never be stored after it. Aliases need no extra care: moving or deleting an alias row
/// changes the subscribers on both sides, which drops every cached id that reached them.
package final class SnapshotCache: Sendable {
    private struct Entry {
        var snapshot: SubscriberSnapshot
        /// What the store compares before trusting the entry ("" when it never compares).
        var version: String
        var cost: Int
        /// The snapshot's rendering, copied here from it once a request made one
        /// (`rendering(tenantID:id:)`), and whether the id asked is not the subscriber's own.
        var rendering: [UInt8]? = nil
        var reachedByAlias: Bool
    }
    private struct AskedID: Hashable {
        var tenantID: String
        var id: String

        /// The id's bytes and the tenant id's last eight: the id is the client's choice, so all
        /// of it goes through the seeded hash (no crafted collisions); the tenant id is ours and
        /// random, and its tail tells tenants apart as well as its whole would. Equality is the
        /// whole of both. Hashing both strings whole cost ~150 instructions more a cached GET.
        func hash(into hasher: inout Hasher) {
            withUTF8Bytes(id) { hasher.combine(bytes: UnsafeRawBufferPointer($0)) }
            hasher.combineTail(of: tenantID)
        }
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
    package let budget: Int

    package init(budgetBytes: Int) { budget = budgetBytes }

    /// The cached snapshot `id` reaches in this tenant, or the epoch to pass to `store` after
    /// reading it from the database.
    package func lookup(tenantID: String, id: String) -> (snapshot: SubscriberSnapshot?, epoch: UInt64) {
        state.withLock { s in (s.entries[AskedID(tenantID: tenantID, id: id)]?.snapshot, s.epoch) }
    }

    /// What a caller with nothing to check needs of the cached snapshot `id` reaches: its
    /// rendering, once a request made one, read from the entry without reaching the snapshot.
    /// Among many cached people that object is a miss to memory of its own each GET
    /// (bench/get-cache-misses.sh). Nil when nothing is cached or nothing rendered yet; the
    /// first call after a rendering copies it into the entry.
    package func rendering(tenantID: String, id: String) -> CachedRendering? {
        state.withLock { s in
            let asked = AskedID(tenantID: tenantID, id: id)
            guard let entry = s.entries[asked] else { return nil }
            if let rendering = entry.rendering {
                return CachedRendering(bytes: rendering, reachedByAlias: entry.reachedByAlias)
            }
            guard let kept = entry.snapshot.keptRendering else { return nil }
            s.entries[asked]?.rendering = kept
            return CachedRendering(bytes: kept, reachedByAlias: entry.reachedByAlias)
        }
    }

    /// The cached snapshot `id` reaches in this tenant with the version it was stored with.
    package func versioned(tenantID: String, id: String) -> (snapshot: SubscriberSnapshot, version: String)? {
        state.withLock { s in s.entries[AskedID(tenantID: tenantID, id: id)].map { ($0.snapshot, $0.version) } }
    }

    /// Keeps what a read that began at `epoch` found, unless a write ended since. An entry
    /// already held for `id` is replaced only by one with another version.
    package func store(
        _ snapshot: SubscriberSnapshot, version: String = "", tenantID: String, id: String, epoch: UInt64
    ) {
        guard budget > 0 else { return }
        let asked = AskedID(tenantID: tenantID, id: id)
        let cost = Self.cost(of: snapshot, asked: asked)
        state.withLock { s in
            guard s.epoch == epoch else { return }
            if let held = s.entries[asked] {
                guard held.version != version else { return }
                Self.remove(asked, in: &s)
            }
            while s.cost + cost > budget, s.evictFrom < s.storedOrder.count {
                Self.remove(s.storedOrder[s.evictFrom], in: &s)
                s.evictFrom += 1
            }
            s.entries[asked] = Entry(
                snapshot: snapshot, version: version, cost: cost, reachedByAlias: snapshot.record.id != id)
            s.askedIDs[snapshot.record.key, default: []].append(asked)
            s.cost += cost
            s.storedOrder.append(asked)
            Self.compactOrder(&s)
        }
    }

    /// Keeps `storedOrder` within a few times the entries held: drops what was evicted, and
    /// what `invalidate` dropped or a replacement left behind, when they outnumber the rest.
    private static func compactOrder(_ s: inout State) {
        let waste = s.storedOrder.count - s.entries.count
        guard waste > 1024, waste > s.entries.count else { return }
        // A replaced entry was appended again: keep its newest place only.
        var seen = Set<AskedID>()
        let live = s.storedOrder[s.evictFrom...].reversed().filter { s.entries[$0] != nil && seen.insert($0).inserted }
        s.storedOrder = live.reversed()
        s.evictFrom = 0
    }

    /// Drops every id cached for these subscribers and moves the epoch. Runs on the writer
    /// thread after each group's transaction ended.
    package func invalidate(_ keys: Set<Int64>) {
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
    package var count: Int { state.withLock { $0.entries.count } }

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

/// A cached subscriber as the API shows it: the rendering a request made of its snapshot, and
/// whether the id it was asked by is an alias (the answer then says `resolvedFrom`).
package struct CachedRendering: Sendable {
    package let bytes: [UInt8]
    package let reachedByAlias: Bool
}

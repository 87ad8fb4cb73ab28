import Identity
import Testing

@testable import Storage

/// The cache's own rules, without a database: what it stores, what drops it, what it refuses.
@Suite struct SnapshotCacheTests {
    private func snapshot(key: Int64, id: String) -> SubscriberSnapshot {
        SubscriberSnapshot(
            record: SubscriberRecord(
                key: key, tenantID: "tn_a", id: id, anonymous: false, verified: false, email: nil,
                emailSubscribed: false,
                lastSeq: 0, eventCount: 0, createdAt: Timestamp(millis: 0), updatedAt: Timestamp(millis: 0)),
            attributes: [], aliases: [], pushSubscriptions: [], preferences: [], devices: [])
    }

    /// What a GET that missed does: note the epoch, read (here: make) the snapshot, store it.
    private func readThrough(_ cache: SnapshotCache, key: Int64, id asked: String, recordID: String? = nil) {
        let epoch = cache.lookup(tenantID: "tn_a", id: asked).epoch
        cache.store(snapshot(key: key, id: recordID ?? asked), tenantID: "tn_a", id: asked, epoch: epoch)
    }

    @Test func aReadThatStartedBeforeAWriteEndedIsNotStored() {
        let cache = SnapshotCache(budgetBytes: 1 << 20)
        let (missed, epoch) = cache.lookup(tenantID: "tn_a", id: "u1")
        #expect(missed == nil)
        cache.invalidate([])  // a group ended while the read was running: it may have read the old rows
        cache.store(snapshot(key: 1, id: "u1"), tenantID: "tn_a", id: "u1", epoch: epoch)
        #expect(cache.count == 0)
        #expect(cache.lookup(tenantID: "tn_a", id: "u1").snapshot == nil)
    }

    @Test func invalidatingASubscriberDropsEveryIdCachedForIt() {
        let cache = SnapshotCache(budgetBytes: 1 << 20)
        for id in ["u1", "anon_old", "other-alias"] { readThrough(cache, key: 1, id: id, recordID: "u1") }
        readThrough(cache, key: 2, id: "u2")
        #expect(cache.count == 4)
        #expect(cache.lookup(tenantID: "tn_a", id: "anon_old").snapshot?.record.id == "u1")
        #expect(cache.lookup(tenantID: "tn_b", id: "u1").snapshot == nil)  // ids are per tenant
        cache.invalidate([1])
        #expect(cache.count == 1)
        #expect(cache.lookup(tenantID: "tn_a", id: "anon_old").snapshot == nil)
        #expect(cache.lookup(tenantID: "tn_a", id: "u2").snapshot?.record.key == 2)
    }

    @Test func theBudgetBoundsWhatIsHeld() {
        let cache = SnapshotCache(budgetBytes: 4096)
        for key in 1...100 as ClosedRange<Int64> { readThrough(cache, key: key, id: "user-\(key)") }
        #expect(cache.count > 0)
        #expect(cache.count < 100)
        let last = cache.lookup(tenantID: "tn_a", id: "user-100").snapshot
        #expect(last?.record.key == 100)  // the newest entry is always kept
    }

    @Test func theOldestEntriesGoFirstPastTheBudget() {
        let cache = SnapshotCache(budgetBytes: 8192)
        for key in 1...500 as ClosedRange<Int64> { readThrough(cache, key: key, id: "user-\(key)") }
        let held = (1...500).filter { cache.lookup(tenantID: "tn_a", id: "user-\($0)").snapshot != nil }
        #expect(!held.isEmpty && held.count < 500)
        // What is left is the newest run of stores, nothing older kept in between.
        #expect(held == Array((500 - held.count + 1)...500))
    }
}

import Testing

@testable import API

/// The SQLite server's count of unproven app calls: the 24 hours before now, per tenant, in
/// hourly buckets, old hours dropped as new ones come.
struct UnverifiedCallCounterTests {
    private let hour: Int64 = 3_600_000

    @Test func countsTheLast24HoursPerTenant() {
        let counter = UnverifiedCallCounter()
        // Two calls an hour for 30 hours; a third tenant-b call now and then.
        for h in Int64(0)..<30 {
            counter.recordUnverifiedCall(tenantID: "a", nowMillis: h * hour + 10)
            counter.recordUnverifiedCall(tenantID: "a", nowMillis: h * hour + 20)
            if h % 10 == 0 { counter.recordUnverifiedCall(tenantID: "b", nowMillis: h * hour) }
        }
        let now = 29 * hour + 30
        #expect(counter.unverifiedCalls(tenantID: "a", nowMillis: now) == 48)  // hours 6…29
        #expect(counter.unverifiedCalls(tenantID: "b", nowMillis: now) == 2)  // hours 10 and 20
        #expect(counter.unverifiedCalls(tenantID: "c", nowMillis: now) == 0)
        // A day later nothing of it is within the window.
        #expect(counter.unverifiedCalls(tenantID: "a", nowMillis: now + 24 * hour) == 0)
    }

    @Test func aQuietTenantsOldHoursAreDroppedWhenItIsCalledAgain() {
        let counter = UnverifiedCallCounter()
        for h in Int64(0)..<25 { counter.recordUnverifiedCall(tenantID: "a", nowMillis: h * hour) }
        // 100 hours later: one call; only it counts, whatever was kept before.
        counter.recordUnverifiedCall(tenantID: "a", nowMillis: 125 * hour)
        #expect(counter.unverifiedCalls(tenantID: "a", nowMillis: 125 * hour) == 1)
        counter.recordUnverifiedCall(tenantID: "a", nowMillis: 125 * hour + 1)
        #expect(counter.unverifiedCalls(tenantID: "a", nowMillis: 125 * hour + 2) == 2)
    }
}

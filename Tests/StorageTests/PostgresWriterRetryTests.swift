import Dispatch
import Identity
import Postgres
import Synchronization
import TestSupport
import Testing

@testable import PostgresStorage

/// A write that runs again after a lost race is still one request: what it told the 24-hour
/// unverified-call count (`Caller.onUnproven`, inside the write body) counts once.
@Suite(.enabled(if: PostgresTestDatabase.isAvailable, "BUZZKIT_TEST_POSTGRES_URL is not set"))
struct PostgresWriterRetryTests {
    struct Refused: Error {}

    let now = Timestamp(millis: 1_800_000_000_000)

    /// A store that never flushes its counts (no maintenance started), so a count is exactly
    /// what this server was told: a flush racing the read could show a call twice or not at all.
    func withStore(_ body: (PostgresIdentityStore) throws -> Void) throws {
        let database = try #require(try PostgresTestDatabase.make())
        defer { database.drop() }
        var configuration = PostgresIdentityStore.Configuration(url: database.url)
        configuration.poolSize = 4
        let store = try PostgresIdentityStore(configuration: configuration)
        defer { store.close() }
        try body(store)
    }

    /// Runs one write whose body counts an unverified call on every try and fails its first
    /// `conflicts` tries with a serialization failure; then `last` decides how the final try ends.
    func countAfter(
        conflicts: Int, tenant: String, on store: PostgresIdentityStore, last: @escaping @Sendable () throws -> Void
    ) -> (tries: Int, retries: Int, counted: Int) {
        let tries = Atomic<Int>(0)
        let retriesBefore = store.writeRetries
        let (tenantID, nowMillis) = (tenant, now.millis)
        _ = try? store.write { _ in
            // What `Access.authorize` does for an app call without a proof.
            store.recordUnverifiedCall(tenantID: tenantID, nowMillis: nowMillis)
            if tries.add(1, ordering: .relaxed).newValue <= conflicts {
                throw PostgresError(sqlState: "40001", message: "could not serialize access (forced by the test)")
            }
            try last()
        }
        return (
            tries.load(ordering: .relaxed), store.writeRetries - retriesBefore,
            store.unverifiedCalls(tenantID: tenantID, nowMillis: nowMillis)
        )
    }

    @Test func aRetriedWriteCountsItsUnverifiedCallOnce() throws {
        try withStore { store in
            let outcome = countAfter(conflicts: 2, tenant: "ten_retried", on: store) {}
            #expect(outcome.tries == 3, "two forced conflicts, then the commit")
            #expect(outcome.retries == 2)
            #expect(outcome.counted == 1)
        }
    }

    @Test func aRefusedWriteStillCountsOnce() throws {
        try withStore { store in
            // An unproven call that is refused (verification required) counts too, once.
            let outcome = countAfter(conflicts: 1, tenant: "ten_refused", on: store) { throw Refused() }
            #expect(outcome.tries == 2)
            #expect(outcome.counted == 1)
        }
    }

    @Test func aWriteThatRunsOutOfTriesCountsOnce() throws {
        try withStore { store in
            let outcome = countAfter(conflicts: 100, tenant: "ten_exhausted", on: store) {}
            // One more when the first try shared a group (with the start-up purge job).
            #expect((PostgresWriter.attempts...PostgresWriter.attempts + 1).contains(outcome.tries))
            #expect(outcome.counted == 1)
        }
    }

    @Test func aCallOutsideAWriteCountsAtOnce() throws {
        try withStore { store in
            store.recordUnverifiedCall(tenantID: "ten_read", nowMillis: now.millis)
            store.recordUnverifiedCall(tenantID: "ten_read", nowMillis: now.millis)
            #expect(store.unverifiedCalls(tenantID: "ten_read", nowMillis: now.millis) == 2)
        }
    }
}

import Identity
import Postgres
import Synchronization
import Threads

/// `GET /v1/subscribers/{id}` on PostgreSQL: snapshots asked for at about the same time are
/// answered together, one statement for a whole batch, and a cached snapshot is answered only
/// after the database said it is still current.
///
/// Why batches: a read costs a round trip to PostgreSQL however small it is, and PostgreSQL's
/// per-statement work, not ours, bounded GET (bench/README.md, "PostgreSQL"). Why a check per
/// read rather than invalidation: another server's write must be seen by a read that starts
/// after it was acknowledged (API.md §12), and only the database knows of it in time.
///
/// Group commit, for reads: whoever asks while fewer than `maxBatchesOut` batches are out leads
/// one, taking every question waiting (its own included); questions asked meanwhile wait for
/// the next batch, led by the first of them when a batch comes back. Each question is in a
/// statement that began after it was asked, so its answer includes every write committed
/// before that.
final class PostgresSnapshotReader: Sendable {
    /// One caller's question, answered (or made leader) under `state`'s lock.
    private final class Question: @unchecked Sendable {
        let tenantID: String
        let id: String
        let held: (snapshot: SubscriberSnapshot, version: String)?
        /// Set under the lock: the answer, or that this caller leads the next batch.
        var outcome: Result<SubscriberSnapshot?, any Error>?
        var leads = false
        let woken = Semaphore()

        init(tenantID: String, id: String, held: (snapshot: SubscriberSnapshot, version: String)?) {
            self.tenantID = tenantID
            self.id = id
            self.held = held
        }
    }

    private struct State {
        var waiting: [Question] = []
        var batchesOut = 0
    }

    private let state = Mutex(State())
    private let pool: ConnectionPool
    private let cache: SnapshotCache?
    private let maxBatchesOut: Int
    private let maxBatch: Int
    /// Batches sent and questions they answered, since start (`/metrics`).
    let batches = Atomic<Int>(0)
    let questions = Atomic<Int>(0)
    /// Questions answered from the cache after the check.
    let hits = Atomic<Int>(0)
    /// Batches sent again on a fresh connection.
    let connectionRetries = Atomic<Int>(0)

    /// - Parameters:
    ///   - cache: Where checked snapshots are kept; nil reads every snapshot whole.
    ///   - maxBatchesOut: Statements in flight at once (connections this reader takes).
    ///   - maxBatch: Questions per statement at most.
    init(pool: ConnectionPool, cache: SnapshotCache?, maxBatchesOut: Int = 2, maxBatch: Int = 256) {
        self.pool = pool
        self.cache = cache
        self.maxBatchesOut = max(1, maxBatchesOut)
        self.maxBatch = max(1, maxBatch)
    }

    /// The snapshot `id` reaches in this tenant, current as of a statement that began after
    /// this call did. Blocks the calling thread for about one round trip.
    func snapshot(tenantID: String, id: String) throws -> SubscriberSnapshot? {
        let question = Question(tenantID: tenantID, id: id, held: cache?.versioned(tenantID: tenantID, id: id))
        var leads = state.withLock { s in
            s.waiting.append(question)
            guard s.batchesOut < maxBatchesOut else { return false }
            s.batchesOut += 1
            return true
        }
        while true {
            if leads { lead() }
            let outcome: Result<SubscriberSnapshot?, any Error>? = state.withLock { _ in question.outcome }
            if let outcome { return try outcome.get() }
            question.woken.wait()
            leads = state.withLock { _ in
                defer { question.leads = false }
                return question.leads
            }
        }
    }

    /// Sends one batch of what is waiting, answers it, and passes the lead on.
    private func lead() {
        let batch = state.withLock { s in
            let taken = Array(s.waiting.prefix(maxBatch))
            s.waiting.removeFirst(taken.count)
            return taken
        }
        let outcomes = answer(batch)
        let wake: [Question] = state.withLock { s in
            var wake: [Question] = []
            for (question, outcome) in zip(batch, outcomes) {
                question.outcome = outcome
                wake.append(question)
            }
            if let next = s.waiting.first {
                next.leads = true
                wake.append(next)
            } else {
                s.batchesOut -= 1
            }
            return wake
        }
        // The leader's own question is in `batch` (or still waiting): waking it is harmless, it
        // finds its outcome set, or waits on for it.
        for question in wake { question.woken.signal() }
    }

    /// One statement for the whole batch; on a connection that died since its last use (a
    /// PostgreSQL restart), one more try on a fresh one.
    private func answer(_ batch: [Question]) -> [Result<SubscriberSnapshot?, any Error>] {
        guard !batch.isEmpty else { return [] }  // another leader took them first
        let asked = batch.map {
            PostgresContext.SnapshotQuestion(tenantID: $0.tenantID, id: $0.id, heldVersion: $0.held?.version)
        }
        var attempt = 0
        while true {
            attempt += 1
            do {
                let answers = try pool.withConnection { db in
                    try PostgresContext(db: db).snapshots(answering: asked)
                }
                batches.add(1, ordering: .relaxed)
                questions.add(batch.count, ordering: .relaxed)
                return batch.indices.map { index in
                    let question = batch[index]
                    guard let answer = answers[index] else { return .success(nil) }
                    guard let fresh = answer.snapshot else {
                        hits.add(1, ordering: .relaxed)
                        return .success(question.held?.snapshot)
                    }
                    // The epoch is only SQLite's; here every entry is checked before use.
                    cache?.store(fresh, version: answer.version, tenantID: question.tenantID, id: question.id, epoch: 0)
                    return .success(fresh)
                }
            } catch let error as PostgresError where error.isConnectionFailure && attempt == 1 {
                connectionRetries.add(1, ordering: .relaxed)
                pool.discardIdle()
            } catch {
                return batch.map { _ in .failure(PostgresIdentityStore.domainError(error)) }
            }
        }
    }
}

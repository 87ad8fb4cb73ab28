import Identity
import Postgres
import Synchronization
import Threads

/// `GET /v1/subscribers/{id}` on PostgreSQL: snapshots asked for at about the same time are
/// answered together, in one round trip when each question of the batch holds a current
/// snapshot or none holds one (two otherwise), and a cached snapshot is answered only after the
/// database said it is still current.
///
/// Why batches: a read costs a round trip to PostgreSQL however small it is, and a server
/// that sent one statement per GET spent its time waiting and switching threads (bench/README.md,
/// "PostgreSQL"). Why a check per read rather than invalidation: another server's write must be
/// seen by a read that starts after it was acknowledged (API.md §12), and only the database
/// knows of it in time.
///
/// Group commit, for reads: a statement thread (or a few) takes every question waiting (up to
/// `maxBatch`), sends its statements (`PostgresContext.snapshots(answering:)`), and hands each
/// asker its answer. Questions asked while the statements are out wait for the next batch. Each
/// question is answered by a statement that began after it was asked, so its answer includes
/// every write committed before that.
final class PostgresSnapshotReader: Sendable {
    typealias Completion = @Sendable (Result<SubscriberSnapshot?, any Error>) -> Void

    private struct Question: Sendable {
        var tenantID: String
        var id: String
        var held: (snapshot: SubscriberSnapshot, version: String)?
        var completion: Completion
    }

    private struct Queue {
        var waiting: [Question] = []
        var closed = false
    }

    private let queue = ConditionLock(Queue())
    private let pool: ConnectionPool
    private let cache: SnapshotCache?
    private let maxBatch: Int
    private let threads = Mutex<[NamedThread]>([])
    /// Batches answered and the questions in them, since start (`/metrics`).
    let batches = Atomic<Int>(0)
    let questions = Atomic<Int>(0)
    /// Questions answered from the cache after the check.
    let hits = Atomic<Int>(0)
    /// Statements sent again on a fresh connection.
    let connectionRetries = Atomic<Int>(0)

    /// Starts the statement threads.
    /// - Parameters:
    ///   - cache: Where checked snapshots are kept; nil reads every snapshot whole.
    ///   - statementsInFlight: Statement threads, each with a pooled connection while it sends.
    ///   - maxBatch: Questions per statement at most.
    init(pool: ConnectionPool, cache: SnapshotCache?, statementsInFlight: Int = 1, maxBatch: Int = 256) {
        self.pool = pool
        self.cache = cache
        self.maxBatch = max(1, maxBatch)
        let started = (0..<max(1, statementsInFlight)).map { index in
            NamedThread.start(name: "pg-snapshot-\(index)") { [self] in run() }
        }
        threads.withLock { $0 = started }
    }

    /// Asks for the snapshot `id` reaches in this tenant; `completion` runs on a statement
    /// thread with what a statement that began after this call read.
    func snapshot(tenantID: String, id: String, completion: @escaping Completion) {
        let question = Question(
            tenantID: tenantID, id: id, held: cache?.versioned(tenantID: tenantID, id: id), completion: completion)
        let accepted = queue.withLock { q in
            guard !q.closed else { return false }
            q.waiting.append(question)
            return true
        }
        guard accepted else {
            return completion(.failure(IdentityError(code: .unavailable, message: "The server is shutting down.")))
        }
        queue.signal()
    }

    /// `snapshot(tenantID:id:completion:)`, waiting for the answer on the caller's thread.
    func snapshot(tenantID: String, id: String) throws -> SubscriberSnapshot? {
        let answer = ConditionLock<Result<SubscriberSnapshot?, any Error>?>(nil)
        snapshot(tenantID: tenantID, id: id) { result in
            answer.withLock { $0 = result }
            answer.broadcast()
        }
        return try answer.withLock(waitingUntil: { $0 != nil }) { $0! }.get()
    }

    /// Answers what was already asked, then stops the statement threads.
    func close() {
        queue.withLock { $0.closed = true }
        queue.broadcast()
        // Taken out, so a second close joins nothing.
        let started = threads.withLock { running in
            defer { running = [] }
            return running
        }
        for thread in started { thread.join() }
    }

    /// A statement thread: takes what waits, answers it, until closed and drained.
    private func run() {
        while true {
            let batch = queue.withLock(waitingUntil: { !$0.waiting.isEmpty || $0.closed }) { q -> [Question] in
                // All of it, as it nearly always is: the array moved out, not its questions
                // copied (each a retain of its strings, snapshot and completion) and released.
                guard q.waiting.count > maxBatch else { return exchange(&q.waiting, with: []) }
                let taken = Array(q.waiting.prefix(maxBatch))
                q.waiting.removeFirst(taken.count)
                return taken
            }
            if batch.isEmpty { return }  // closed, nothing left
            for (question, outcome) in zip(batch, answer(batch)) { question.completion(outcome) }
        }
    }

    /// The whole batch on one connection; on a connection that died since its last use (a
    /// PostgreSQL restart), one more try on a fresh one.
    private func answer(_ batch: [Question]) -> [Result<SubscriberSnapshot?, any Error>] {
        let asked = batch.map {
            PostgresContext.SnapshotQuestion(
                tenantID: $0.tenantID, id: $0.id, held: $0.held.map { ($0.snapshot.record.key, $0.version) })
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

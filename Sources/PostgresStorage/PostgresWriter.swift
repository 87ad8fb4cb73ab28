import Glibc
import Identity
import Postgres
import Synchronization
import Threads

/// The write side of the PostgreSQL store: a queue of jobs and a few writer threads, each
/// committing up to `maxBatch` queued jobs per transaction with a savepoint per job, so one
/// job's failure undoes only itself (as `DatabaseWriter` does on SQLite).
///
/// Transactions are `READ COMMITTED` with explicit row locks: every subscriber (and tenant) row a
/// job reads is taken `FOR UPDATE` (see ``PostgresContext/locksRows``), so two servers racing
/// on one id or one timeline queue on the row instead of aborting, and the second reads the
/// first one's `last_seq` and aliases once it has the lock: seq stays gapless and a merge
/// happens once. (`SERIALIZABLE` made 16 writers on one subscriber abort each other with
/// `40001` until the retries ran out and clients got 503.) What still fails — a deadlock
/// between two groups locking rows in different orders (`40P01`), a row both inserted
/// (`23505`) — runs its group again from the start, a bounded number of times with jitter.
/// A group that loses once is split: its jobs retry one by one, so a hot subscriber does not
/// drag unrelated jobs through every retry.
final class PostgresWriter: Sendable {
    /// One queued write: `perform` runs in the transaction and returns what to deliver once it
    /// commits; `fail` reports an error instead.
    struct Job: Sendable {
        let perform: @Sendable (PostgresContext) throws -> (@Sendable () -> Void)
        let fail: @Sendable (any Error) -> Void
    }

    private struct Queue {
        var jobs: [Job] = []
        var closed = false
        var running = 0
    }

    /// Tries per group (and per job after a split), the first one included.
    static let attempts = 8

    /// Unverified app calls told by the job tries running now, per writer thread: kept until
    /// the try's fate is known, dropped when it runs again, so each request counts once.
    private let heldCalls = Mutex<[pthread_t: [UnverifiedCall]]>([:])
    private let onUnverifiedCalls: @Sendable ([UnverifiedCall]) -> Void

    private let pool: ConnectionPool
    private let maxBatch: Int
    private let queue = ConditionLock(Queue())
    private let afterCommit: @Sendable (GroupEffectsSnapshot) -> Void
    private let onSkipped: (@Sendable (String, any Error) -> Void)?
    /// Groups and jobs run again after a serialization failure, deadlock or unique race.
    let retries = Atomic<Int>(0)
    /// Groups committed.
    let commits = Atomic<Int>(0)

    /// Starts `threads` writer threads.
    /// - Parameters:
    ///   - pool: Where each group borrows its connection.
    ///   - threads: Writer threads: groups in flight at once on this server.
    ///   - maxBatch: Jobs per transaction at most.
    ///   - afterCommit: Runs after each commit, before the jobs' completions (auth invalidation).
    init(
        pool: ConnectionPool, threads: Int, maxBatch: Int, onSkipped: (@Sendable (String, any Error) -> Void)? = nil,
        onUnverifiedCalls: @escaping @Sendable ([UnverifiedCall]) -> Void = { _ in },
        afterCommit: @escaping @Sendable (GroupEffectsSnapshot) -> Void
    ) {
        self.onSkipped = onSkipped
        self.onUnverifiedCalls = onUnverifiedCalls
        self.pool = pool
        self.maxBatch = max(1, maxBatch)
        self.afterCommit = afterCommit
        for _ in 0..<max(1, threads) {
            queue.withLock { $0.running += 1 }
            NamedThread.detach(name: "pg-writer") { [self] in run() }
        }
    }

    /// Queues a job; `fail` runs at once if the writer is closed.
    func submit(_ job: Job) {
        let accepted = queue.withLock { state -> Bool in
            guard !state.closed else { return false }
            state.jobs.append(job)
            return true
        }
        if accepted {
            queue.broadcast()
        } else {
            job.fail(IdentityError(code: .unavailable, message: "The server is shutting down."))
        }
    }

    /// Finishes queued jobs, then stops the threads and waits for them.
    func close() {
        queue.withLock { $0.closed = true }
        queue.broadcast()
        queue.withLock(waitingUntil: { $0.running == 0 }) { _ in }
    }

    private func run() {
        while true {
            let batch = queue.withLock(waitingUntil: { !$0.jobs.isEmpty || $0.closed }) { state -> [Job]? in
                guard !state.jobs.isEmpty else { return nil }  // closed and drained
                let count = min(maxBatch, state.jobs.count)
                defer { state.jobs.removeFirst(count) }
                return Array(state.jobs.prefix(count))
            }
            guard let batch else { break }
            runGroup(batch)
        }
        queue.withLock { $0.running -= 1 }
        queue.broadcast()
    }

    /// Runs a batch as one transaction; on a retryable failure, again, then job by job.
    private func runGroup(_ jobs: [Job]) {
        if jobs.count == 1 {
            runAlone(jobs[0])
            return
        }
        switch counting(jobs, final: false) {
        case .committed: return
        case .failed(let error):
            for job in jobs { job.fail(PostgresIdentityStore.domainError(error)) }
        case .retry:
            retries.add(1, ordering: .relaxed)
            for job in jobs { runAlone(job) }
        }
    }

    private func runAlone(_ job: Job) {
        for attemptNumber in 1...Self.attempts {
            switch counting([job], final: attemptNumber == Self.attempts) {
            case .committed: return
            case .failed(let error):
                job.fail(PostgresIdentityStore.domainError(error))
                return
            case .retry(let error):
                if attemptNumber == Self.attempts {
                    job.fail(PostgresIdentityStore.domainError(error))
                    return
                }
                retries.add(1, ordering: .relaxed)
                backOff(attempt: attemptNumber)
            }
        }
    }

    /// Keeps an unverified call told on this thread while a job try runs.
    /// - Returns: false when this thread runs no job try (the caller counts the call itself).
    func hold(_ call: UnverifiedCall) -> Bool {
        let thread = pthread_self()
        return heldCalls.withLock { held in
            guard held[thread] != nil else { return false }
            held[thread]!.append(call)
            return true
        }
    }

    /// One ``attempt(_:)`` with the unverified calls its jobs told held, then counted unless the
    /// try runs again (`final`: it will not, whatever it returns).
    private func counting(_ jobs: [Job], final: Bool) -> Outcome {
        let thread = pthread_self()
        heldCalls.withLock { $0[thread] = [] }
        let outcome = attempt(jobs)
        let calls = heldCalls.withLock { $0.removeValue(forKey: thread) } ?? []
        if case .retry = outcome, !final { return outcome }
        // Counted before any caller hears back, so a caller that reads the count next sees it.
        if !calls.isEmpty { onUnverifiedCalls(calls) }
        if case .committed(let report) = outcome { report() }
        return outcome
    }

    private enum Outcome {
        /// Done: `report` answers the jobs (deliveries and their own failures).
        case committed(report: () -> Void)
        case retry(any Error)
        case failed(any Error)
    }

    /// One transaction over `jobs`. A job's own error (a domain refusal, a bug) rolls back its
    /// savepoint and fails it alone; a retryable database error aborts the whole try.
    private func attempt(_ jobs: [Job]) -> Outcome {
        let effects = GroupEffects()
        var deliveries: [(@Sendable () -> Void)?] = []
        var failures: [(Int, any Error)] = []
        do {
            try pool.withConnection { db in
                try db.transaction(.readCommitted) {
                    let context = PostgresContext(db: db, effects: effects, onSkipped: onSkipped)
                    for (index, job) in jobs.enumerated() {
                        do {
                            if jobs.count == 1 {
                                deliveries.append(try job.perform(context))
                            } else {
                                deliveries.append(try db.savepoint("job") { try job.perform(context) })
                            }
                        } catch let error as PostgresError where Self.isRetryable(error) || error.isConnectionFailure {
                            throw error
                        } catch {
                            deliveries.append(nil)
                            failures.append((index, error))
                        }
                    }
                    if jobs.count == 1, !failures.isEmpty {
                        // A lone job that failed: nothing to commit.
                        throw AbandonGroup()
                    }
                    if effects.authChanged {
                        // Delivered to every listening server when (and only if) this commits.
                        _ = try db.query("SELECT pg_notify($1, '')", [PostgresIdentityStore.authChannel])
                    }
                }
            }
        } catch is AbandonGroup {
            let (_, error) = failures[0]
            return .committed(report: { jobs[0].fail(error) })
        } catch let error as PostgresError where Self.isRetryable(error) {
            return .retry(error)
        } catch let error as PostgresError where error.isConnectionFailure && error.sql != "COMMIT" {
            // The connection died before COMMIT was sent, so nothing of this try is left on the
            // server; other pooled connections are likely dead too (a database restart). A
            // failure during COMMIT is not retried: the commit may have happened.
            pool.discardIdle()
            return .retry(error)
        } catch {
            return .failed(error)
        }
        commits.add(1, ordering: .relaxed)
        afterCommit(GroupEffectsSnapshot(authChanged: effects.authChanged, retired: effects.retired))
        return .committed(report: { [deliveries, failures] in
            var failed = failures.makeIterator()
            var nextFailure = failed.next()
            for (index, job) in jobs.enumerated() {
                if let failure = nextFailure, failure.0 == index {
                    job.fail(failure.1)
                    nextFailure = failed.next()
                } else if let deliver = deliveries[index] {
                    deliver()
                }
            }
        })
    }

    /// Worth running again from the start: a lost serialization race, a deadlock, or a unique
    /// key another transaction inserted first (SSI reports most of those as `40001`, but not
    /// all: <https://www.postgresql.org/docs/15/transaction-iso.html#XACT-SERIALIZABLE>).
    static func isRetryable(_ error: PostgresError) -> Bool {
        error.isRetryable || error.isUniqueViolation
    }

    private struct AbandonGroup: Error {}
}

/// An app call on an external id without a valid proof, for the tenant's 24-hour count.
struct UnverifiedCall: Sendable {
    var tenantID: String
    var nowMillis: Int64
}

/// What the store learns from a committed group.
struct GroupEffectsSnapshot: Sendable {
    var authChanged: Bool
    var retired: Bool
}

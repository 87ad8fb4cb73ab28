import Glibc
import Synchronization
import Threads

/// Where the SQLite layer reports a failure that has no caller to throw to (a PRAGMA on the
/// writer thread, a background checkpoint), for the log and a metric: `operation` names what
/// failed ("checkpoint(passive)", "PRAGMA wal_autocheckpoint").
package typealias DatabaseErrorHandler = @Sendable (_ operation: String, _ error: any Error) -> Void

/// The single write connection, owned by one dedicated thread that commits queued jobs in groups.
///
/// The thread takes everything queued (up to `maxBatch` jobs), runs `BEGIN IMMEDIATE`, each job
/// in its own `SAVEPOINT` (a job that throws rolls back only its own changes and gets its own
/// error), then one `COMMIT`. Only once the group is on disk are the jobs' completions called,
/// so a completion that reports success means the data is durable.
///
/// While the completion thread is inside a sync of the log, a group that committed now would
/// wait for the sync after it anyway; so its transaction stays open and jobs that arrive
/// meanwhile join it, until that sync ends (or `maxBatch`, a log restart, or `close`). The
/// group then commits just as the completion thread is free to sync it: fewer, larger groups
/// (each writes the pages its jobs share once) at no extra wait. An idle completion thread means
/// an immediate commit, so a lone write is not held.
///
/// Durability without holding the writer: asked for `synchronous=FULL` on a WAL database, the
/// writer's own connection commits with `NORMAL` (the log is written, not synced) and the
/// completion thread makes the log durable with one `fdatasync` before it completes the groups
/// committed so far. The writer meanwhile runs the next group instead of waiting for the disk:
/// with FULL, the fsync inside `COMMIT` was a third of the writer's time per identify. An
/// acknowledged group is as durable as under FULL: WAL frames are only ever appended, and
/// recovery keeps the longest prefix of frames whose checksums chain, so a later group can never
/// survive an earlier lost one. Checkpoints run on connections with the caller's `FULL` (the
/// log is synced before it is copied, the database after). The difference: other connections
/// may read a group in the millisecond before its sync; should the machine lose power then, that
/// group is gone though someone read it (no caller was told it was stored). A failed
/// `fdatasync` fails every group waiting for it and every later one (what reached the disk is no
/// longer known; restart the server, as PostgreSQL does after a failed fsync).
///
/// - If `BEGIN` fails (read-only database, disk full…) every job of the group gets that error.
/// - If `COMMIT` fails every job of the group gets that error (a job that had already failed
///   keeps its own).
/// - If a job's error makes SQLite roll back the whole transaction (`SQLITE_FULL`,
///   `SQLITE_IOERR`…), that job and the ones before it in the group get the error and the rest
///   are retried in a new group.
/// - `SQLITE_BUSY` (another process holding the write lock) is retried by SQLite for the busy
///   timeout, then surfaces as the error of the group.
///
/// Jobs run on the writer thread. Completions run on a second thread, `buzzkit-db-complete`,
/// which receives each group's completions in one hand-off, in commit order, after the log's
/// sync; the writer holds its next group open until they have run (see above). A job submitted
/// on an event loop with `completesOnCallingLoop` (the store's writes) is only handed back to
/// that loop there, and completes on it (the API renders the answer there): the next group is
/// not held open for the rendering, and two loops render at once. A job may use
/// ``Database/savepoint(_:_:)`` but not ``Database/transaction(_:_:)``.
///
/// ```swift
/// let writer = try DatabaseWriter(path: "buzzkit.sqlite")
/// writer.submit({ db in
///     try db.execute("INSERT INTO users(email) VALUES (?)", [email])
///     return db.lastInsertRowID
/// }, completion: { result in respond(result) })
/// let count = try writer.write { db in try db.queryOne("SELECT count(*) FROM users")?.int(0) }
/// ```
package final class DatabaseWriter: Sendable {
    private struct State: Sendable {
        var queue: [any WriterJob] = []
        var closing = false
        var finished = false
        var checkpointInterval: Duration?
        /// Set by the checkpoint thread: restart the log before the next group (see
        /// ``checkpointInBackground(every:restartAfterFrames:onDatabaseSync:)``). Cleared once
        /// the restart ran; until then the checkpoint thread runs no checkpoint of its own to
        /// collide with it.
        var restartLogRequested = false
        /// True while the completion thread syncs the log: a group then stays open for more jobs.
        var logSyncing = false
        var writerThread: pthread_t?
        var checkpointer: Checkpointer?
    }

    private let shared: ConditionLock<State>
    /// Where and how the writer's connection was opened: the checkpoint thread opens its own.
    private let path: String
    private let options: Database.Options
    private let onError: DatabaseErrorHandler?
    /// The savepoint each job runs in, its statements made once.
    private static let jobSavepoint = Savepoint("job")

    /// A job the writer is done with, and the error its own work threw (nil: its work stays).
    private struct RanJob: Sendable {
        let job: any WriterJob
        let ownError: (any Error)?
    }

    /// One group's jobs, handed from the writer to the completion thread.
    private struct DeliveredGroup: Sendable {
        /// Why the group did not commit, given to every job whose own work did not fail; nil when
        /// it committed, and its jobs wait for the log's sync (and get that sync's error, if any).
        let error: (any Error)?
        let jobs: [RanJob]
        var committed: Bool { error == nil }
    }

    /// Groups of completions the writer handed over, waiting for the completion thread.
    private struct Deliveries: Sendable {
        var groups: [DeliveredGroup] = []
        var stopping = false
        var stopped = false
        var thread: pthread_t?
    }

    private let deliveries: ConditionLock<Deliveries>

    /// Opens the connection on the calling thread (so open errors are thrown here), then hands
    /// it to a new writer thread.
    /// - Parameters:
    ///   - path: The database file.
    ///   - options: Connection options; the defaults give WAL and `synchronous=FULL`.
    ///   - maxBatch: Most jobs committed together.
    ///   - onCommit: Called on the writer thread after each successful group commit, before the
    ///     group's completions, with the number of jobs in it and how long `COMMIT` took (metrics).
    ///   - onSync: Called on the completion thread after each `fdatasync` of the log it runs for
    ///     the groups committed so far (when the writer leaves the sync to it), with how long the
    ///     sync took: the wait every acknowledged write shares (metrics).
    ///   - onLogRestart: Called on the writer thread after each `RESTART` checkpoint (see
    ///     ``checkpointInBackground(every:restartAfterFrames:onDatabaseSync:)``), with how long
    ///     it took: new writes wait for it (metrics).
    ///   - setUp: Runs once on the writer's connection before any job (functions, temp triggers).
    ///   - afterJob: Called on the writer thread after each job's savepoint ended: `true` when its
    ///     work stays in the group, `false` when it was rolled back.
    ///   - beforeCommit: Runs on the writer thread after a group's last job, in its transaction and
    ///     outside every job's savepoint, before `COMMIT`: work that belongs to the whole group
    ///     (the webhook outbox's rows). If it throws, the group rolls back and every job fails.
    ///   - afterGroup: Called on the writer thread when a group's transaction ended, committed or
    ///     not, before any of its completions: what it does is seen by every caller the group answers.
    ///   - onError: Told of every failure no job sees: the writer's PRAGMAs, checkpoints.
    package init(
        path: String, options: Database.Options = .init(), maxBatch: Int = 256,
        onCommit: (@Sendable (_ batchSize: Int, _ commitDuration: Duration) -> Void)? = nil,
        onSync: (@Sendable (_ syncDuration: Duration) -> Void)? = nil,
        onLogRestart: (@Sendable (_ restartDuration: Duration) -> Void)? = nil,
        setUp: ((Database) throws -> Void)? = nil,
        afterJob: (@Sendable (_ kept: Bool) -> Void)? = nil,
        beforeCommit: (@Sendable (Database) throws -> Void)? = nil,
        afterGroup: (@Sendable () -> Void)? = nil,
        onError: DatabaseErrorHandler? = nil
    ) throws {
        precondition(maxBatch > 0, "maxBatch must be positive")
        self.path = path
        self.options = options
        self.onError = onError
        let commitsCounter = Commits()
        self.commits = commitsCounter
        // One `pwrite` per commit for the log's frames instead of two per frame (BatchedLogVFS).
        var writerOptions = options
        writerOptions.batchesLogWrites = true
        let database = try Database(path: path, options: writerOptions)
        // See the type's note on durability: the completion thread syncs the log instead.
        var log: SyncedFile?
        if options.synchronous == .full, try database.queryOne("PRAGMA journal_mode")?.string(0) == "wal" {
            try database.execute("PRAGMA synchronous = NORMAL")
            log = SyncedFile(path: path + "-wal")
        }
        try setUp?(database)
        let shared = ConditionLock(State())
        self.shared = shared
        let deliveries = ConditionLock(Deliveries())
        self.deliveries = deliveries
        let logToSync = log
        NamedThread.detach(name: "db-complete") {
            Self.runCompletions(deliveries, writerState: shared, log: logToSync, onSync: onSync, onError: onError)
        }
        // The connection is not Sendable; after this line only the writer thread touches it.
        let transfer = UnsafeTransfer(value: database)
        NamedThread.detach(name: "db-writer") {
            WriterLoop(
                database: transfer.value, shared: shared, deliveries: deliveries, maxBatch: maxBatch,
                onCommit: onCommit, onLogRestart: onLogRestart, afterJob: afterJob, beforeCommit: beforeCommit,
                afterGroup: afterGroup, onError: onError, commits: commitsCounter, log: logToSync,
                busyTimeout: options.busyTimeout
            ).run()
        }
    }

    deinit {
        // The last reference may be dropped by a job on the writer thread or by a completion on
        // the completion thread, neither of which can wait for the shutdown: there, only ask the
        // threads to drain and stop.
        if isWriterThread || isCompletionThread {
            shared.withLock { $0.closing = true }
            shared.broadcast()
        } else {
            close()
        }
    }

    /// Queues a job; `completion` is called on the completion thread once its group committed
    /// (with the job's value) or failed (with the error).
    ///
    /// After ``close()``, `completion` is called at once, on the calling thread, with an error.
    /// - Parameters:
    ///   - job: The work, run inside its own savepoint of the group's transaction.
    ///   - completesOnCallingLoop: Run `completion` on the event loop that submits, when one
    ///     does (``LoopIteration/handBackToCurrent``), not on the completion thread. The completion
    ///     thread then only hands it back. Until it has done that for a group, the writer holds
    ///     the next group open (see the type's note), so a completion run there, rendering an
    ///     answer, delayed the next commit; on the loops, two run at once. The caller must not
    ///     make its loop wait for the completion.
    ///   - completion: Receives the job's value or error.
    package func submit<T: Sendable>(
        _ job: @escaping @Sendable (Database) throws -> T,
        completesOnCallingLoop: Bool = false,
        completion: @escaping @Sendable (Result<T, any Error>) -> Void
    ) {
        submit(
            ClosureJob(
                work: job, completion: completion,
                handBack: completesOnCallingLoop ? LoopIteration.handBackToCurrent : nil))
    }

    /// Queues a job made as one object (see ``WriterJob``). After ``close()``, the job is
    /// completed at once, on the calling thread, with an error.
    package func submit(_ job: any WriterJob) {
        let accepted = shared.withLock { state in
            guard !state.closing else { return false }
            state.queue.append(job)
            return true
        }
        guard accepted else {
            job.complete(SQLiteError.misuse("the database writer is closed"))
            return
        }
        shared.broadcast()
    }

    /// Submits a job and blocks until it committed; for the CLI and tests.
    ///
    /// Must not be called from a job or a completion (the writer would wait for itself).
    /// - Parameter job: The work.
    /// - Returns: The job's value, once on disk.
    package func write<T: Sendable>(_ job: @escaping @Sendable (Database) throws -> T) throws -> T {
        precondition(
            !isWriterThread && !isCompletionThread,
            "DatabaseWriter.write called from a job or completion would wait for itself")
        let outcome = ConditionLock<Result<T, any Error>?>(nil)
        submit(job) { result in
            outcome.withLock { $0 = result }
            outcome.broadcast()
        }
        return try outcome.withLock(waitingUntil: { $0 != nil }) { $0! }.get()
    }

    /// Takes WAL checkpoints off the commit path and off the writer thread.
    ///
    /// Sets `PRAGMA wal_autocheckpoint = 0` on the writer's connection (otherwise the commit that
    /// crosses 1000 WAL pages runs the checkpoint and its caller waits for it:
    /// <https://www.sqlite.org/wal.html#automatic_checkpoint>), and starts a thread,
    /// `buzzkit-db-checkpoint`, with its own connection, that runs a `PASSIVE` checkpoint every
    /// `every` when something was committed since the last one. A checkpoint copies every page
    /// changed since the last one into the database file and fsyncs it; run on the writer thread
    /// it held up every queued request for that long (at 18k identify/s, up to a second's worth of
    /// changed pages). In WAL mode a checkpoint from another connection runs alongside the
    /// writer's commits (<https://www.sqlite.org/wal.html#concurrency>); passive never waits.
    /// After a whole interval without commits the thread also runs one `TRUNCATE` checkpoint,
    /// so a WAL that grew (a backup pins a snapshot; a flood outruns the checkpoints) goes back
    /// to zero bytes once writes pause. Its connection never waits for a lock (busy timeout 0):
    /// a truncate that would have to wait for a reader or writer just tries again next pause.
    /// While writes flow the WAL is cut only past 1 GiB (`journal_size_limit`, applied when the
    /// log restarts): at 64 MiB it was cut at every restart under a flood and regrew block by
    /// block, each commit's fsync carrying the size change (identify p99 5.8 → 104 ms; 6–62 ms
    /// at 256 MiB).
    ///
    /// A flood that never pauses still has to restart the log: readers that overlap without end
    /// keep a read mark in the WAL, so the writer can never go back to its start and the file
    /// grew by ~50 MB a second (2 GB after 40 s of identifies, throughput down from 10k to 1k a
    /// second). So when a passive checkpoint leaves a log longer than `restartAfterFrames`, the
    /// log is restarted with one `RESTART` checkpoint, which blocks new writes while it copies
    /// what the log gained since the last checkpoint, syncs the database file and waits for the
    /// readers still on the log. Three things keep that pause short:
    /// - the checkpoint thread first runs passive rounds, each copying what the last one left,
    ///   until one is quick (a few milliseconds of frames left to copy);
    /// - it then syncs the database file itself, round after round, until a sync is quick.
    ///   SQLite syncs the database file only at the end of a checkpoint that reached the log's
    ///   end, which a round under a flood never does, so every page the rounds had copied was
    ///   left for the `RESTART`'s own sync: 5–150 ms of write-back while every write waited
    ///   (identify restarts 6–11 ms, events ×50 10–146 ms; with the sync here 1–2 ms and 6–22 ms);
    /// - then the writer thread runs the `RESTART` itself between two groups. Run from the
    ///   checkpoint thread it had to win the write lock from a writer that takes it again right
    ///   after each commit: SQLite's busy handler slept 1, 2, 5, 10… ms between tries while
    ///   frames piled up, and restarts took 5–220 ms (up to 3,768 frames left to copy), the tail
    ///   of identify's latency.
    /// Readers still on the log are waited for up to 100 ms; past that the restart gives up
    /// (reported) and is asked for again after the next checkpoint. The next commit after a
    /// restart writes from the log's start.
    /// - Parameters:
    ///   - every: Time between checkpoints.
    ///   - restartAfterFrames: WAL length (pages) past which the log is restarted while writes
    ///     flow; 16,384 pages is 64 MiB at the default 4 KiB page.
    ///   - onDatabaseSync: Called on the checkpoint thread after each sync of the database file it
    ///     runs before asking for a restart, with how long it took.
    package func checkpointInBackground(
        every: Duration, restartAfterFrames: Int = 16_384,
        onDatabaseSync: (@Sendable (_ syncDuration: Duration) -> Void)? = nil
    ) throws {
        var checkpointOptions = options
        checkpointOptions.busyTimeout = .zero
        let connection = try Database(path: path, options: checkpointOptions)
        let shared = shared
        let checkpointer = Checkpointer(
            database: connection, databaseFile: path, every: every, restartAfterFrames: restartAfterFrames,
            commits: commits, onDatabaseSync: onDatabaseSync,
            requestRestart: {
                shared.withLock { $0.restartLogRequested = true }
                shared.broadcast()
            },
            restartPending: { shared.withLock { $0.restartLogRequested } },
            onError: onError)
        let started = shared.withLock { state -> Bool in
            guard state.checkpointer == nil, !state.closing else { return false }
            state.checkpointInterval = every
            state.checkpointer = checkpointer
            return true
        }
        guard started else {
            connection.close()
            return
        }
        shared.broadcast()
        checkpointer.start()
    }

    /// Groups ended so far; the checkpoint thread skips a round when it has not moved.
    private let commits: Commits

    /// How many groups have ended. It moves once a group's `COMMIT` returned (or the group
    /// failed), before the group's `afterGroup` and completions run. So a reader that loads it and
    /// then begins a read transaction sees every write acknowledged before the load, and any write
    /// whose snapshot-cache invalidation came before it: how `DatabaseReaderPool` knows that a read
    /// transaction it kept open is still current. A failed group moves it too, in case its
    /// `COMMIT` failed after its changes became visible; the cost is one transaction begun anew.
    package var groupsEnded: UInt64 { commits.count.load(ordering: .acquiring) }

    /// Runs every job already queued, checkpoints (`TRUNCATE`), closes the connection and ends
    /// the thread; blocks until done. Idempotent; later submits fail.
    package func close() {
        precondition(
            !isWriterThread && !isCompletionThread,
            "DatabaseWriter.close called from a job or completion would wait for itself")
        shared.withLock { $0.closing = true }
        shared.broadcast()
        shared.withLock(waitingUntil: { $0.finished }) { _ in }
    }

    private var isWriterThread: Bool {
        shared.withLock { state in state.writerThread.map { pthread_equal($0, pthread_self()) != 0 } ?? false }
    }

    private var isCompletionThread: Bool {
        deliveries.withLock { state in state.thread.map { pthread_equal($0, pthread_self()) != 0 } ?? false }
    }

    /// The completion thread: runs handed-over groups in order until the writer stops it, after
    /// one sync of the log for all the committed groups it took (when the writer does not sync).
    private static func runCompletions(
        _ deliveries: ConditionLock<Deliveries>, writerState: ConditionLock<State>, log: SyncedFile?,
        onSync: (@Sendable (Duration) -> Void)?, onError: DatabaseErrorHandler?
    ) {
        deliveries.withLock { $0.thread = pthread_self() }
        var syncError: (any Error)?
        while true {
            let (groups, stopping) = deliveries.withLock(waitingUntil: { !$0.groups.isEmpty || $0.stopping }) { state in
                defer { state.groups = [] }
                return (state.groups, state.stopping)
            }
            // Every group taken was committed before this sync starts, so it covers them all.
            let syncing = syncError == nil && log != nil && groups.contains(where: \.committed)
            if syncing, let log {
                // The writer keeps its group open until this sync and its completions are done
                // (see the type's note).
                writerState.withLock { $0.logSyncing = true }
                do {
                    let started = ContinuousClock.now
                    try log.sync()
                    onSync?(ContinuousClock.now - started)
                } catch {
                    syncError = error
                    onError?("fdatasync(wal)", error)
                }
            }
            for group in groups {
                let groupError = group.committed ? syncError : group.error
                for ran in group.jobs { Self.complete(ran.job, ran.ownError ?? groupError) }
            }
            if syncing {
                writerState.withLock { $0.logSyncing = false }
                writerState.broadcast()
            }
            if stopping && groups.isEmpty { break }
        }
        log?.close()
        deliveries.withLock { $0.stopped = true }
        deliveries.broadcast()
    }

    /// Completes a job on the completion thread, or hands it back to its loop (``WriterJob/handBack``)
    /// while that loop still takes tasks.
    private static func complete(_ job: any WriterJob, _ error: (any Error)?) {
        if let handBack = job.handBack, handBack({ job.complete(error) }) { return }
        job.complete(error)
    }

    // MARK: - The writer thread

    /// Everything the writer thread owns; lives on that thread only.
    private struct WriterLoop {
        let database: Database
        let shared: ConditionLock<State>
        let deliveries: ConditionLock<Deliveries>
        let maxBatch: Int
        let onCommit: (@Sendable (Int, Duration) -> Void)?
        let onLogRestart: (@Sendable (Duration) -> Void)?
        let afterJob: (@Sendable (Bool) -> Void)?
        let beforeCommit: (@Sendable (Database) throws -> Void)?
        let afterGroup: (@Sendable () -> Void)?
        let onError: DatabaseErrorHandler?
        let commits: Commits
        /// The log the completion thread syncs, opened here after the first commit; nil when
        /// `COMMIT` syncs.
        let log: SyncedFile?
        /// The connection's busy timeout, put back after a log restart's shorter one.
        let busyTimeout: Duration

        /// Runs maintenance SQL whose failure no job would see: reported, never swallowed.
        private func maintain(_ operation: String, _ body: () throws -> Void) {
            do { try body() } catch { onError?(operation, error) }
        }

        func run() {
            shared.withLock { $0.writerThread = pthread_self() }
            var autoCheckpointDisabled = false
            while true {
                let (batch, closing, interval, restartLog) = shared.withLock(
                    waitingUntil: { !$0.queue.isEmpty || $0.closing || $0.restartLogRequested }
                ) { state in
                    let batch: [any WriterJob]
                    if state.queue.count <= maxBatch {
                        batch = state.queue
                        state.queue = []
                    } else {
                        batch = Array(state.queue.prefix(maxBatch))
                        state.queue.removeFirst(maxBatch)
                    }
                    return (batch, state.closing, state.checkpointInterval, state.restartLogRequested)
                }
                if restartLog {
                    restartLogBetweenGroups()
                    shared.withLock { $0.restartLogRequested = false }
                }
                if interval != nil && !autoCheckpointDisabled {
                    autoCheckpointDisabled = true
                    maintain("PRAGMA wal_autocheckpoint") { try database.execute("PRAGMA wal_autocheckpoint = 0") }
                    // A backstop only, far above what a 5 s flood writes here (~400 MB): the
                    // WAL is cut at pauses (see `Checkpointer`), but a flood that never pauses
                    // must not keep a WAL of many GB once the log restarts.
                    maintain("PRAGMA journal_size_limit") {
                        try database.execute("PRAGMA journal_size_limit = \(1 << 30)")
                    }
                }
                if batch.isEmpty && closing { break }
                var remaining = batch[...]
                while !remaining.isEmpty {
                    remaining = runGroup(remaining)
                }
            }
            // The checkpoint connection closes first: the writer's must be the last one for
            // SQLite to checkpoint and delete the WAL.
            shared.withLock { $0.checkpointer }?.stop()
            maintain("checkpoint(truncate) at close") { try database.checkpoint(.truncate) }
            database.close()
            // Every completion is delivered before close() returns.
            deliveries.withLock { $0.stopping = true }
            deliveries.broadcast()
            deliveries.withLock(waitingUntil: { $0.stopped }) { _ in }
            shared.withLock { $0.finished = true }
            shared.broadcast()
        }

        /// The log restart the checkpoint thread asked for (see `checkpointInBackground`), run
        /// here where no group holds the write lock. Its jobs queue meanwhile and go in the next group.
        private func restartLogBetweenGroups() {
            database.setBusyTimeout(.milliseconds(100))
            defer { database.setBusyTimeout(busyTimeout) }
            let started = ContinuousClock.now
            do {
                try database.checkpoint(.restart)
                onLogRestart?(ContinuousClock.now - started)
            } catch {
                onError?("checkpoint(restart)", error)
            }
        }

        /// Hands a group's jobs to the completion thread, one lock and one wake-up per group:
        /// completed with `error` when the group failed, else after the log's sync.
        private func deliver(_ jobs: [RanJob], failedWith error: (any Error)?) {
            guard !jobs.isEmpty else { return }
            let group = DeliveredGroup(error: error, jobs: jobs)
            deliveries.withLock { $0.groups.append(group) }
            deliveries.broadcast()
        }

        /// Jobs for the open group while the completion thread syncs the log: what is queued (up to
        /// `room`), waiting for some if nothing is; nil once the sync ended (commit now, it will be
        /// synced at once), or when a log restart or `close` wants the group ended.
        private func jobsArrivingWhileLogSyncs(room: Int) -> ArraySlice<any WriterJob>? {
            shared.withLock(
                waitingUntil: { !$0.logSyncing || !$0.queue.isEmpty || $0.closing || $0.restartLogRequested }
            ) { state -> ArraySlice<any WriterJob>? in
                guard state.logSyncing, !state.closing, !state.restartLogRequested, !state.queue.isEmpty else {
                    return nil
                }
                if state.queue.count <= room {
                    defer { state.queue = [] }
                    return state.queue[...]
                }
                let taken = Array(state.queue.prefix(room))
                state.queue.removeFirst(room)
                return taken[...]
            }
        }

        /// Runs a job in its own savepoint of the open group.
        /// - Returns: The error its work threw; nil when its changes stay in the group.
        private func run(_ job: any WriterJob) -> (any Error)? {
            // The connection alone in the closure: `self` there copied the whole loop (a retain
            // and a release of each of its references, every job).
            let database = database
            do {
                try database.savepoint(DatabaseWriter.jobSavepoint) { try job.run(database) }
                return nil
            } catch {
                return error
            }
        }

        /// Runs one group in one transaction.
        /// - Returns: Jobs not attempted because SQLite aborted the transaction.
        private func runGroup(_ jobs: ArraySlice<any WriterJob>) -> ArraySlice<any WriterJob> {
            do {
                try database.execute(TransactionKind.immediate.beginSQL, [])
            } catch {
                deliver(jobs.map { RanJob(job: $0, ownError: nil) }, failedWith: error)
                return []
            }
            var completions: [RanJob] = []
            completions.reserveCapacity(jobs.count)
            var batch = jobs
            while true {
                for index in batch.indices {
                    let job = batch[index]
                    let error = run(job)
                    afterJob?(error == nil)
                    completions.append(RanJob(job: job, ownError: error))
                    if !database.isInTransaction {
                        // SQLite rolled back the whole transaction (https://www.sqlite.org/lang_transaction.html,
                        // "Response To Errors Within A Transaction"): every job so far lost its work.
                        let groupError = error ?? SQLiteError.misuse("a job ended the writer's transaction")
                        commits.count.add(1, ordering: .releasing)
                        afterGroup?()
                        deliver(completions, failedWith: groupError)
                        return batch[(index + 1)...]
                    }
                }
                guard completions.count < maxBatch,
                    let more = jobsArrivingWhileLogSyncs(room: maxBatch - completions.count)
                else { break }
                batch = more
            }
            var start: UInt64 = 0
            do {
                try beforeCommit?(database)
                start = monotonicNanoseconds()
                try database.execute("COMMIT TRANSACTION", [])
            } catch {
                database.rollbackIgnoringErrors()
                commits.count.add(1, ordering: .releasing)
                afterGroup?()
                deliver(completions, failedWith: error)
                return []
            }
            let duration = Duration.nanoseconds(Int64(monotonicNanoseconds() - start))
            // Before `afterGroup` and any completion (see `groupsEnded`).
            commits.count.add(1, ordering: .releasing)
            // Metrics first, so whoever a completion wakes already sees this commit counted.
            onCommit?(completions.count, duration)
            log?.openOnce()
            afterGroup?()
            deliver(completions, failedWith: nil)
            return []
        }
    }
}

/// Work for the writer thread, and what to do once its group's fate is known, as one object.
///
/// The closure form (``DatabaseWriter/submit(_:completesOnCallingLoop:completion:)``) builds
/// one of these; a caller on the hot path implements it itself, so that a write is a single
/// allocation from the loop that submits it to the loop that renders its answer, where nested
/// closures made one per layer (the work, the completion, the hand-back, the outcome), each
/// allocated on one thread and read and freed on others (`SQLiteIdentityStore`'s writes).
package protocol WriterJob: AnyObject, Sendable {
    /// The work, on the writer thread, inside the job's own savepoint of the open group. It keeps
    /// its value for ``complete(_:)``; a throw rolls back its savepoint only.
    func run(_ db: Database) throws
    /// Called once when the job's fate is known: `error` is nil when the job's work succeeded,
    /// its group committed and the log is synced; otherwise the work's own error, or why the group
    /// failed (also for a job never run). Called on the job's ``handBack`` loop when it has one
    /// that still takes tasks, else on the completion thread; after ``DatabaseWriter/close()``, at
    /// once on the submitting thread. The writer hands a group over under a lock and the loop
    /// takes tasks under another, so what `run` stored is visible here.
    func complete(_ error: (any Error)?)
    /// The event loop the job completes on (see ``DatabaseWriter/submit(_:completesOnCallingLoop:completion:)``);
    /// nil: the completion thread.
    var handBack: LoopIteration.HandBack? { get }
}

/// The job ``DatabaseWriter/submit(_:completesOnCallingLoop:completion:)`` queues.
///
/// `@unchecked Sendable`: `value` is written by `run` on the writer thread and read by `complete`
/// after the hand-offs that follow (see ``WriterJob/complete(_:)``).
private final class ClosureJob<T: Sendable>: WriterJob, @unchecked Sendable {
    private let work: @Sendable (Database) throws -> T
    private let completion: @Sendable (Result<T, any Error>) -> Void
    let handBack: LoopIteration.HandBack?
    private var value: T?

    init(
        work: @escaping @Sendable (Database) throws -> T,
        completion: @escaping @Sendable (Result<T, any Error>) -> Void, handBack: LoopIteration.HandBack?
    ) {
        self.work = work
        self.completion = completion
        self.handBack = handBack
    }

    func run(_ db: Database) throws { value = try work(db) }

    func complete(_ error: (any Error)?) { completion(WriterJobResult.of(value, error)) }
}

/// What a job's completion reports, from the value its `run` kept and the error it was completed
/// with.
package enum WriterJobResult {
    package static func of<T>(_ value: T?, _ error: (any Error)?) -> Result<T, any Error> {
        if let error { return .failure(error) }
        guard let value else { return .failure(SQLiteError.misuse("a write job completed without a value")) }
        return .success(value)
    }
}

/// A file of SQLite's synced through a descriptor of our own: `fdatasync` on it flushes what
/// SQLite's descriptors wrote to the same file. Used for the write-ahead log, which the
/// completion thread syncs (the writer commits with `synchronous=NORMAL`; the writer thread
/// opens it after its first commit, when the file surely exists and before a close could
/// delete it, and a checkpoint that truncates the log keeps the file: SQLite deletes it only
/// when the last connection closes), and for the database file, which the checkpoint thread
/// syncs before a log restart. An open that failed is the error of every sync.
private final class SyncedFile: Sendable {
    private enum Descriptor {
        case notOpened
        case opened(Int32)
        case failed(SQLiteError)
    }

    let path: String
    private let descriptor = Mutex(Descriptor.notOpened)

    init(path: String) { self.path = path }

    /// Opens the file the first time; later calls do nothing.
    func openOnce() {
        descriptor.withLock { descriptor in
            guard case .notOpened = descriptor else { return }
            let opened = open(path, O_RDONLY | O_CLOEXEC)
            descriptor = opened >= 0 ? .opened(opened) : .failed(Self.failure("open", path: path))
        }
    }

    /// Makes everything written to the file so far durable.
    func sync() throws(SQLiteError) {
        let current = descriptor.withLock { $0 }
        switch current {
        case .opened(let opened):
            guard fdatasync(opened) == 0 else { throw Self.failure("fdatasync", path: path) }
        case .failed(let error): throw error
        case .notOpened: throw Self.failure("sync before open", path: path)
        }
    }

    func close() {
        descriptor.withLock { descriptor in
            if case .opened(let opened) = descriptor { _ = Glibc.close(opened) }
            descriptor = .notOpened
        }
    }

    /// SQLITE_IOERR_FSYNC: answered as an I/O error, like a failed sync inside `COMMIT`.
    private static func failure(_ call: String, path: String) -> SQLiteError {
        SQLiteError(
            extendedCode: 10 | (4 << 8), message: "\(call) of \(path) failed: \(String(cString: strerror(errno)))")
    }
}

/// How many groups the writer ended (``DatabaseWriter/groupsEnded``), for the checkpoint thread and
/// the readers.
private final class Commits: Sendable {
    let count = Atomic<UInt64>(0)
}

/// The checkpoint thread of
/// ``DatabaseWriter/checkpointInBackground(every:restartAfterFrames:onDatabaseSync:)``: its own
/// connection, a `PASSIVE` checkpoint every `every` when the writer committed something since.
private final class Checkpointer: Sendable {
    private struct State: Sendable {
        var stopping = false
        var stopped = false
    }

    private let state = ConditionLock(State())
    /// Used only by the checkpoint thread once started.
    private let database: UnsafeTransfer<Database>
    /// The database file, synced before a restart is asked for; opened on first use.
    private let databaseFile: SyncedFile
    private let every: Duration
    private let restartAfterFrames: Int
    private let commits: Commits
    /// Asks the writer thread to restart the log between two groups.
    private let requestRestart: @Sendable () -> Void
    /// Whether the writer has yet to run the restart asked for.
    private let restartPending: @Sendable () -> Bool
    /// Told how long each of `prepareLogRestart`'s syncs of the database file took.
    private let onDatabaseSync: (@Sendable (Duration) -> Void)?
    private let onError: DatabaseErrorHandler?

    init(
        database: Database, databaseFile: String, every: Duration, restartAfterFrames: Int, commits: Commits,
        onDatabaseSync: (@Sendable (Duration) -> Void)?,
        requestRestart: @escaping @Sendable () -> Void, restartPending: @escaping @Sendable () -> Bool,
        onError: DatabaseErrorHandler?
    ) {
        self.database = UnsafeTransfer(value: database)
        self.databaseFile = SyncedFile(path: databaseFile)
        self.onDatabaseSync = onDatabaseSync
        self.every = every
        self.restartAfterFrames = restartAfterFrames
        self.commits = commits
        self.requestRestart = requestRestart
        self.restartPending = restartPending
        self.onError = onError
    }

    func start() {
        NamedThread.detach(name: "db-checkpoint") { self.run() }
    }

    /// Ends the thread and closes its connection; blocks until done.
    func stop() {
        state.withLock { $0.stopping = true }
        state.broadcast()
        state.withLock(waitingUntil: { $0.stopped }) { _ in }
    }

    private func run() {
        var checkpointedAt: UInt64 = 0
        var truncatedAt: UInt64 = 0
        while !state.withLock(waitingUntil: { $0.stopping }, timeout: every, { $0.stopping }) {
            // The writer's restart copies the log itself; a checkpoint here would only make one
            // of the two wait for the other (and the restart blocks writes while it waits).
            if restartPending() { continue }
            let committed = commits.count.load(ordering: .relaxed)
            // An error (SQLITE_BUSY while a reader or writer holds the log…) is tried again next
            // round, and reported: a checkpoint that keeps failing is a WAL that keeps growing.
            if committed != checkpointedAt {
                do {
                    let passive = try database.value.checkpoint(.passive)
                    if passive.logFrames > restartAfterFrames { prepareLogRestart() }
                } catch {
                    onError?("checkpoint(passive)", error)
                }
                checkpointedAt = committed
            } else if committed != truncatedAt {
                // A pause: SQLite reuses a WAL but never shrinks it (one backup left 1.5 GB).
                do {
                    try database.value.checkpoint(.truncate)
                    truncatedAt = committed
                } catch {
                    onError?("checkpoint(truncate)", error)
                }
            }
        }
        database.value.close()
        databaseFile.close()
        state.withLock { $0.stopped = true }
        state.broadcast()
    }

    /// Copies what the log gained during the last checkpoint, round after round, until a round
    /// is quick; syncs the database file, with a round after each sync, until a sync is quick;
    /// then asks the writer for the `RESTART`: it blocks new writes only while it copies what is
    /// left and syncs what the last round and it copied (see `checkpointInBackground`).
    private func prepareLogRestart() {
        for _ in 0..<Self.maxCatchUpRounds {
            let started = ContinuousClock.now
            guard passiveRound() else { return }
            if ContinuousClock.now - started < Self.quickRound { break }
        }
        for _ in 0..<Self.maxCatchUpRounds {
            let started = ContinuousClock.now
            // A failed sync is reported and left to the restart, which syncs (and fails) itself.
            guard syncDatabaseFile() else { break }
            let synced = ContinuousClock.now - started
            onDatabaseSync?(synced)
            // What the writer committed during the sync, copied now (and synced by the next
            // round, or by the restart).
            guard passiveRound() else { return }
            if synced < Self.quickRound { break }
        }
        requestRestart()
    }

    /// One `PASSIVE` checkpoint; false (reported) when it failed.
    private func passiveRound() -> Bool {
        do {
            try database.value.checkpoint(.passive)
            return true
        } catch {
            onError?("checkpoint(passive)", error)
            return false
        }
    }

    /// Syncs the database file: the pages the checkpoints wrote. False (reported) when it failed.
    private func syncDatabaseFile() -> Bool {
        databaseFile.openOnce()
        do {
            try databaseFile.sync()
            return true
        } catch {
            onError?("fdatasync(database)", error)
            return false
        }
    }

    /// A passive round this short leaves the `RESTART` a few milliseconds of frames to copy.
    private static let quickRound = Duration.milliseconds(5)
    /// Under a flood faster than the disk takes pages, rounds stay slow: stop after this many.
    private static let maxCatchUpRounds = 4
}

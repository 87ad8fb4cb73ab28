import Dispatch
import Foundation
import SQLite
import Synchronization
import Testing
import Threads

@Suite struct DatabaseWriterTests {
    let directory = TemporaryDirectory()
    var path: String { directory.file("writer.sqlite") }

    /// Records every group commit's size.
    final class Commits: Sendable {
        let sizes = Mutex<[Int]>([])
        var callback: @Sendable (Int, Duration) -> Void {
            { size, _ in self.sizes.withLock { $0.append(size) } }
        }
    }

    func makeWriter(_ commits: Commits? = nil) throws -> DatabaseWriter {
        let writer = try DatabaseWriter(path: path, onCommit: commits?.callback)
        try writer.write { db in try db.execute("CREATE TABLE t(id INTEGER PRIMARY KEY, v INTEGER NOT NULL UNIQUE)") }
        return writer
    }

    /// Blocks the writer thread inside a job until `open` is signalled, so that jobs submitted
    /// meanwhile form exactly one following group.
    func holdWriter(_ writer: DatabaseWriter) -> DispatchSemaphore {
        let started = DispatchSemaphore(value: 0)
        let gate = DispatchSemaphore(value: 0)
        writer.submit(
            { _ in
                started.signal()
                gate.wait()
            }, completion: { _ in })
        started.wait()
        return gate
    }

    @Test func concurrentSubmitsAllCompleteAndGroup() throws {
        let commits = Commits()
        let writer = try makeWriter(commits)
        let threads = 8
        let perThread = 100
        let done = DispatchGroup()
        let failures = Mutex(0)
        DispatchQueue.concurrentPerform(iterations: threads) { thread in
            for index in 0..<perThread {
                done.enter()
                writer.submit(
                    { db in
                        try db.execute("INSERT INTO t(v) VALUES (?)", [thread * perThread + index])
                        return db.lastInsertRowID
                    },
                    completion: { result in
                        if case .failure = result { failures.withLock { $0 += 1 } }
                        done.leave()
                    })
            }
        }
        #expect(done.wait(timeout: .now() + 10) == .success)
        #expect(failures.withLock { $0 } == 0)
        #expect(
            try writer.write { db in try db.queryOne("SELECT count(*) FROM t")?.int(0) } == Int64(threads * perThread))
        let sizes = commits.sizes.withLock { $0 }
        #expect(sizes.reduce(0, +) == threads * perThread + 2)  // + CREATE TABLE + count
        #expect(sizes.count < threads * perThread)  // fewer commits than jobs
        writer.close()
    }

    @Test func heldWriterGroupsEverythingQueuedIntoOneCommit() throws {
        let commits = Commits()
        let writer = try makeWriter(commits)
        let gate = holdWriter(writer)
        let done = DispatchGroup()
        for value in 0..<50 {
            done.enter()
            writer.submit(
                { db in try db.execute("INSERT INTO t(v) VALUES (?)", [value]) }, completion: { _ in done.leave() })
        }
        gate.signal()
        #expect(done.wait(timeout: .now() + 10) == .success)
        // All 50 in one commit: 51 when the held job's group was still open behind the sync of the
        // group before it (it then takes what queued meanwhile).
        #expect(commits.sizes.withLock { $0 }.contains { $0 == 50 || $0 == 51 })
        writer.close()
    }

    /// While the completion thread syncs the log (and completes what it synced), a group that
    /// committed would only wait for the next sync: the writer keeps it open, and jobs arriving
    /// meanwhile join it. Here the first sync after `A` is held in `onSync`; `B` runs, then `C`
    /// and `D` arrive and run, and all three commit together once the sync is let go.
    @Test func jobsArrivingWhileTheLogSyncsJoinTheOpenGroup() throws {
        let commits = Commits()
        let armed = Atomic(false)
        let inSync = DispatchSemaphore(value: 0)
        let releaseSync = DispatchSemaphore(value: 0)
        let writer = try DatabaseWriter(
            path: path, onCommit: commits.callback,
            onSync: { _ in
                guard armed.exchange(false, ordering: .relaxed) else { return }
                inSync.signal()
                releaseSync.wait()
            })
        try writer.write { db in try db.execute("CREATE TABLE t(id INTEGER PRIMARY KEY, v INTEGER NOT NULL UNIQUE)") }
        let before = commits.sizes.withLock { $0.count }
        armed.store(true, ordering: .relaxed)
        let done = DispatchGroup()
        let ran = DispatchSemaphore(value: 0)
        func insert(_ value: Int) {
            done.enter()
            writer.submit(
                { db in
                    try db.execute("INSERT INTO t(v) VALUES (?)", [value])
                    ran.signal()
                },
                completion: { result in
                    if case .failure(let error) = result { Issue.record("job \(value): \(error)") }
                    done.leave()
                })
        }
        insert(1)  // A: committed alone, then its sync is held
        #expect(ran.wait(timeout: .now() + 10) == .success)
        #expect(inSync.wait(timeout: .now() + 10) == .success)
        insert(2)  // B: runs, and its group stays open behind the held sync
        #expect(ran.wait(timeout: .now() + 10) == .success)
        insert(3)
        insert(4)
        #expect(ran.wait(timeout: .now() + 10) == .success)
        #expect(ran.wait(timeout: .now() + 10) == .success)
        releaseSync.signal()
        #expect(done.wait(timeout: .now() + 10) == .success)
        #expect(Array(commits.sizes.withLock { $0 }.dropFirst(before)) == [1, 3])
        writer.close()
    }

    @Test func failingJobRollsBackOnlyItself() throws {
        let commits = Commits()
        let writer = try makeWriter(commits)
        let results = Mutex<[Int: Result<Int64, any Error>]>([:])
        let done = DispatchGroup()
        let gate = holdWriter(writer)
        for value in [1, 2, 3] {
            done.enter()
            writer.submit(
                { db -> Int64 in
                    try db.execute("INSERT INTO t(v) VALUES (?)", [value])
                    if value == 2 {
                        try db.execute("INSERT INTO t(v) VALUES (?)", [20])
                        throw TestError(tag: "job 2")
                    }
                    return db.lastInsertRowID
                },
                completion: { result in
                    results.withLock { $0[value] = result }
                    done.leave()
                })
        }
        gate.signal()
        #expect(done.wait(timeout: .now() + 10) == .success)
        let outcome = results.withLock { $0 }
        #expect((try? outcome[1]?.get()) != nil)
        #expect((try? outcome[3]?.get()) != nil)
        #expect(throws: TestError(tag: "job 2")) { try outcome[2]!.get() }
        // The three shared one transaction (with the held job too when its group stayed open
        // behind the sync of the group before it: once seen under a loaded full run).
        #expect(commits.sizes.withLock { $0 }.contains { $0 == 3 || $0 == 4 })
        #expect(try writer.write { db in try db.query("SELECT v FROM t ORDER BY v").map { $0.int(0)! } } == [1, 3])

        // A constraint error in a job is that job's error too.
        let duplicate = #expect(throws: SQLiteError.self) {
            try writer.write { db in try db.execute("INSERT INTO t(v) VALUES (?)", [1]) }
        }
        #expect(duplicate?.isConstraintUnique == true)
        writer.close()
    }

    /// The group hooks: `afterJob` tells which jobs' work stayed, `beforeCommit` writes inside the
    /// group's transaction after its last job, and a `beforeCommit` that throws fails the group.
    @Test func groupHooksSeeEachJobsFateAndWriteBeforeTheCommit() throws {
        let kept = Mutex<[Bool]>([])
        let refuse = Atomic<Bool>(false)
        let writer = try DatabaseWriter(
            path: path, afterJob: { job in kept.withLock { $0.append(job) } },
            beforeCommit: { db in
                if refuse.load(ordering: .relaxed) { throw TestError(tag: "before commit") }
                try db.execute("INSERT INTO t(v) VALUES ((SELECT (count(*) FILTER (WHERE v >= 100) + 1) * 100 FROM t))")
            })
        try writer.write { db in try db.execute("CREATE TABLE t(id INTEGER PRIMARY KEY, v INTEGER NOT NULL UNIQUE)") }
        kept.withLock { $0 = [] }
        func group(_ values: [Int]) -> [Int: Result<Void, any Error>] {
            let results = Mutex<[Int: Result<Void, any Error>]>([:])
            let done = DispatchGroup()
            let gate = holdWriter(writer)
            for value in values {
                done.enter()
                writer.submit(
                    { db in
                        try db.execute("INSERT INTO t(v) VALUES (?)", [value])
                        if value < 0 { throw TestError(tag: "refused") }
                    },
                    completion: { result in
                        results.withLock { $0[value] = result }
                        done.leave()
                    })
            }
            gate.signal()
            _ = done.wait(timeout: .now() + 10)
            return results.withLock { $0 }
        }
        _ = group([1, -2, 3])
        // The holding job, then the group's three: the second rolled back.
        #expect(kept.withLock { $0 } == [true, true, false, true])
        let path = path
        let rows = { try Database(path: path).query("SELECT v FROM t ORDER BY v").map { $0.int(0)! } }
        // The jobs' rows, then one row per committed group from the hook (three groups so far:
        // the table's creation, the holding job, the group of 1, -2 and 3).
        #expect(try rows() == [1, 3, 100, 200, 300])
        refuse.store(true, ordering: .relaxed)
        let failed = group([5, 6])
        #expect(failed.count == 2 && failed.values.allSatisfy { if case .failure = $0 { true } else { false } })
        #expect(try rows() == [1, 3, 100, 200, 300], "the group's work rolled back with it")
        writer.close()
    }

    /// `groupsEnded` moves before a group's completions run, for a failed group too: a reader
    /// that kept a transaction open compares it to know whether that is still current.
    @Test func theGroupCountMovesBeforeAnyCompletionOfItsGroup() throws {
        let writer = try makeWriter()
        let seenInCompletion = Mutex<[UInt64]>([])
        func run(_ job: @escaping @Sendable (Database) throws -> Void) -> UInt64 {
            let before = writer.groupsEnded
            let done = DispatchSemaphore(value: 0)
            writer.submit(job) { _ in
                seenInCompletion.withLock { $0.append(writer.groupsEnded) }
                done.signal()
            }
            _ = done.wait(timeout: .now() + 10)
            return before
        }
        let beforeCommit = run { db in try db.execute("INSERT INTO t(v) VALUES (1)") }
        // A job that ends the transaction itself fails its whole group.
        let beforeFailure = run { db in try db.execute("ROLLBACK") }
        #expect(seenInCompletion.withLock { $0 } == [beforeCommit + 1, beforeFailure + 1])
        writer.close()
    }

    @Test func completionsRunOnlyAfterCommit() throws {
        let writer = try makeWriter()
        let readers = try DatabaseReaderPool(path: path, count: 1)
        let visible = Mutex<[Bool]>([])
        let done = DispatchGroup()
        for value in 0..<20 {
            done.enter()
            writer.submit(
                { db in
                    try db.execute("INSERT INTO t(v) VALUES (?)", [value])
                },
                completion: { result in
                    // Another connection sees only committed data.
                    let seen =
                        (try? readers.read { db in try db.queryOne("SELECT 1 FROM t WHERE v = ?", [value]) }) ?? nil
                    visible.withLock { $0.append(seen != nil && (try? result.get()) != nil) }
                    done.leave()
                })
        }
        #expect(done.wait(timeout: .now() + 10) == .success)
        #expect(visible.withLock { $0 } == Array(repeating: true, count: 20))
        readers.close()
        writer.close()
    }

    @Test func theWriterLeavesTheLogsSyncToTheCompletionThread() throws {
        let writer = try makeWriter()
        // Asked for FULL, the writer's connection commits with NORMAL; a checkpoint's keeps FULL.
        #expect(try writer.write { db in try db.queryOne("PRAGMA synchronous")?.int(0) } == 1)
        #expect(try Database(path: path).queryOne("PRAGMA synchronous")?.int(0) == 2)
        writer.close()
    }

    @Test func aLogThatCannotBeSyncedFailsItsGroupAndEveryLaterOne() throws {
        // Another connection creates the log and keeps it from being deleted at close.
        let other = try Database(path: path)
        try other.execute("CREATE TABLE t(v)")
        let reported = Mutex<[String]>([])
        let writer = try DatabaseWriter(
            path: path, onError: { operation, _ in reported.withLock { $0.append(operation) } })
        // SQLite keeps writing to its open descriptor of the unlinked log; the completion thread,
        // opening the log by name for its first sync, cannot: no group may be reported stored.
        #expect(FileManager.default.fileExists(atPath: path + "-wal"))
        try FileManager.default.removeItem(atPath: path + "-wal")
        for statement in ["INSERT INTO t VALUES (1)", "INSERT INTO t VALUES (2)"] {
            let error = #expect(throws: SQLiteError.self) { try writer.write { db in try db.execute(statement) } }
            #expect(error?.isIOError == true, "\(statement): \(String(describing: error))")
        }
        #expect(reported.withLock { $0 } == ["fdatasync(wal)"])
        writer.close()
        other.close()
    }

    @Test func aWriterClosedRightAfterItsFirstWritesReportsThemStored() throws {
        // The log is opened by the writer after its first commit, so the close that deletes it
        // cannot come between that commit and the completion thread's sync.
        let writer = try DatabaseWriter(path: path)
        let stored = Mutex(0)
        writer.submit({ db in try db.execute("CREATE TABLE t(v)") }, completion: { _ in })
        for value in 0..<50 {
            writer.submit(
                { db in try db.execute("INSERT INTO t VALUES (?)", [value]) },
                completion: { result in
                    if case .success = result { stored.withLock { $0 += 1 } }
                })
        }
        writer.close()
        #expect(stored.withLock { $0 } == 50)
        #expect(try Database(path: path).queryOne("SELECT count(*) FROM t")?.int(0) == 50)
    }

    @Test func closeDrainsQueuedJobsThenRefusesNewOnes() throws {
        let writer = try makeWriter()
        let completed = Mutex(0)
        let gate = holdWriter(writer)
        for value in 0..<200 {
            writer.submit(
                { db in try db.execute("INSERT INTO t(v) VALUES (?)", [value]) },
                completion: { result in
                    if case .success = result { completed.withLock { $0 += 1 } }
                })
        }
        gate.signal()
        writer.close()
        writer.close()  // idempotent
        #expect(completed.withLock { $0 } == 200)
        #expect(throws: SQLiteError.self) { try writer.write { _ in 1 } }
        let db = try Database(path: path)
        #expect(try db.queryOne("SELECT count(*) FROM t")?.int(0) == 200)
        // close() checkpointed with TRUNCATE: the WAL is empty.
        let walSize = (try? FileManager.default.attributesOfItem(atPath: path + "-wal")[.size] as? Int) ?? 0
        #expect(walSize == 0)
    }

    @Test func beginFailureIsEveryJobsError() throws {
        try Database(path: path).execute("CREATE TABLE t(v)")
        var options = Database.Options()
        options.readOnly = true
        let writer = try DatabaseWriter(path: path, options: options)
        let error = #expect(throws: SQLiteError.self) {
            try writer.write { db in try db.execute("INSERT INTO t(v) VALUES (1)", []) }
        }
        #expect(error?.isReadOnly == true)
        writer.close()
    }

    @Test func diskFullJobDoesNotReportUncommittedSuccess() throws {
        let writer = try makeWriter()
        try writer.write { db in
            let pages = try db.queryOne("PRAGMA page_count")!.int(0)!
            try db.execute("PRAGMA max_page_count = \(pages + 2)")
        }
        let results = Mutex<[Int: Bool]>([:])
        let done = DispatchGroup()
        let gate = holdWriter(writer)
        for value in 1...3 {
            done.enter()
            writer.submit(
                { db in
                    let size = value == 2 ? 100_000 : 10
                    try db.execute("INSERT INTO t(v) VALUES (?)", [value])
                    try db.execute("CREATE TABLE IF NOT EXISTS big(b)")
                    try db.execute("INSERT INTO big(b) VALUES (zeroblob(?))", [size])
                },
                completion: { result in
                    if case .failure(let error) = result, value == 2 {
                        #expect((error as? SQLiteError)?.isFull == true)
                    }
                    results.withLock { $0[value] = (try? result.get()) != nil }
                    done.leave()
                })
        }
        gate.signal()
        #expect(done.wait(timeout: .now() + 10) == .success)
        let reported = results.withLock { $0 }
        #expect(reported[2] == false)
        // Whatever SQLite did with the transaction, "success" must mean "on disk".
        let stored = try writer.write { db in Set(try db.query("SELECT v FROM t").map { Int($0.int(0)!) }) }
        for value in 1...3 {
            #expect(reported[value] == stored.contains(value), "job \(value)")
        }
        writer.close()
    }

    @Test func backgroundCheckpointKeepsWorking() throws {
        let writer = try makeWriter()
        try writer.checkpointInBackground(every: .milliseconds(20))
        for value in 0..<30 {
            try writer.write { db in try db.execute("INSERT INTO t(v) VALUES (?)", [value]) }
        }
        Thread.sleep(forTimeInterval: 0.1)
        #expect(try writer.write { db in try db.queryOne("PRAGMA wal_autocheckpoint")?.int(0) } == 0)
        writer.close()
        #expect(try Database(path: path).queryOne("SELECT count(*) FROM t")?.int(0) == 30)
    }

    /// A WAL grown while a reader pinned its snapshot (as a backup does) is cut back to zero
    /// bytes at the first pause in writes, not while they flow.
    @Test func aPauseInWritesTruncatesAGrownWAL() throws {
        let writer = try makeWriter()
        try writer.checkpointInBackground(every: .milliseconds(20))
        let pinned = try Database(path: path)
        try pinned.execute("BEGIN")
        _ = try pinned.queryOne("SELECT count(*) FROM t")  // holds a snapshot: no checkpoint can finish
        for value in 0..<200 {
            try writer.write { db in
                try db.execute("INSERT INTO t(v) VALUES (?)", [String(repeating: "x", count: 2000) + "\(value)"])
            }
        }
        let walPath = path + "-wal"
        func walBytes() -> Int { (try? FileManager.default.attributesOfItem(atPath: walPath)[.size] as? Int) ?? -1 }
        Thread.sleep(forTimeInterval: 0.1)
        #expect(walBytes() > 200 * 2000)  // a pause, but the reader still holds the log
        try pinned.execute("COMMIT")
        pinned.close()
        var waited = 0.0
        while walBytes() != 0 && waited < 3 {
            Thread.sleep(forTimeInterval: 0.02)
            waited += 0.02
        }
        #expect(walBytes() == 0)
        writer.close()
        #expect(try Database(path: path).queryOne("SELECT count(*) FROM t")?.int(0) == 200)
    }

    /// Writes that never pause while readers overlap without end: no reader ever leaves the log,
    /// so without a RESTART checkpoint the writer can never go back to the log's start and the
    /// WAL grows by everything written (it reached 2 GB in a 40 s identify flood).
    @Test func aFloodWithOverlappingReadersStillRestartsTheLog() throws {
        let reported = Mutex<[String]>([])
        let restarts = Atomic<Int>(0)
        let writer = try DatabaseWriter(
            path: path, onLogRestart: { _ in restarts.add(1, ordering: .relaxed) },
            onError: { operation, error in reported.withLock { $0.append("\(operation): \(error)") } })
        try writer.write { db in try db.execute("CREATE TABLE t(id INTEGER PRIMARY KEY, v TEXT)") }
        try writer.checkpointInBackground(every: .milliseconds(10), restartAfterFrames: 64)
        let stop = Atomic<Bool>(false)
        let path = path
        let readers = (0..<2).map { offset in
            Thread {
                guard let db = try? Database(path: path) else { return }
                usleep(UInt32(offset * 1000))
                while !stop.load(ordering: .relaxed) {
                    try? db.execute("BEGIN")
                    _ = try? db.queryOne("SELECT count(*) FROM t")
                    usleep(2000)  // two readers, each open 2 ms of every ~2: one is always on the log
                    try? db.execute("COMMIT")
                }
                db.close()
            }
        }
        readers.forEach { $0.start() }
        let rows = 3000
        // Each commit appends its changed pages (the leaf and the page above it, 2 × 4 KiB): a log
        // that never restarts ends at ~24 MB; one restarted along the way (measured): 0.7–8 MB.
        let neverRestarted = rows * 2 * 4096
        for value in 0..<rows {
            try writer.write { db in
                try db.execute("INSERT INTO t(v) VALUES (?)", [String(repeating: "x", count: 2000) + "\(value)"])
            }
        }
        stop.store(true, ordering: .relaxed)
        let walBytes = (try? FileManager.default.attributesOfItem(atPath: path + "-wal")[.size] as? Int) ?? -1
        #expect(walBytes > 0)
        #expect(
            walBytes < neverRestarted / 2,
            "the log was restarted while writes flowed: \(walBytes) bytes, \(reported.withLock { $0.count }) busy")
        // Each restart that ran was reported (for buzzkit_wal_restart_duration_seconds).
        #expect(restarts.load(ordering: .relaxed) > 0)
        usleep(20_000)
        writer.close()
        #expect(try Database(path: path).queryOne("SELECT count(*) FROM t")?.int(0) == Int64(rows))
    }

    /// A flood with no readers: each restart the checkpoint thread asks for runs on the writer
    /// thread between two groups, so it never has to win the write lock from a writer that takes
    /// it again after every commit. From the checkpoint thread it slept in SQLite's busy handler
    /// while frames piled up, and some gave up after 200 ms ("database is locked").
    ///
    /// Before asking, the checkpoint thread syncs the database file itself: the passive rounds
    /// under a flood never reach the log's end, where SQLite would sync it, so without that the
    /// restart's own sync wrote back every page they had copied while writes waited.
    @Test func aFloodRestartsTheLogBetweenGroupsWithoutRacingTheWriter() throws {
        let reported = Mutex<[String]>([])
        let restartThreads = Mutex<[String]>([])
        /// "sync on <thread>" (of the database file) and "restart", in the order they ran.
        let steps = Mutex<[String]>([])
        let writer = try DatabaseWriter(
            path: path,
            onLogRestart: { _ in
                restartThreads.withLock { $0.append(NamedThread.currentName) }
                steps.withLock { $0.append("restart") }
            },
            onError: { operation, error in reported.withLock { $0.append("\(operation): \(error)") } })
        try writer.write { db in try db.execute("CREATE TABLE t(id INTEGER PRIMARY KEY, v TEXT)") }
        try writer.checkpointInBackground(
            every: .milliseconds(2), restartAfterFrames: 32,
            onDatabaseSync: { _ in steps.withLock { $0.append("sync on \(NamedThread.currentName)") } })
        // Four submitters that keep the queue busy, so groups follow one another with no pause.
        let rows = 1500
        let done = DispatchGroup()
        DispatchQueue.concurrentPerform(iterations: 4) { submitter in
            for value in 0..<rows / 4 {
                done.enter()
                writer.submit(
                    { db in
                        try db.execute(
                            "INSERT INTO t(v) VALUES (?)",
                            [String(repeating: "x", count: 2000) + "\(submitter)-\(value)"])
                    }, completion: { _ in done.leave() })
                if value % 16 == 0 { usleep(200) }
            }
        }
        done.wait()
        writer.close()
        let threads = restartThreads.withLock { $0 }
        #expect(!threads.isEmpty, "the log was never restarted during the flood")
        #expect(threads.allSatisfy { $0 == "db-writer" }, "restarts ran on \(Set(threads))")
        let order = steps.withLock { $0 }
        #expect(order.allSatisfy { $0 == "restart" || $0 == "sync on db-checkpoint" }, "\(Set(order))")
        // Every restart came after a sync of the database file since the restart before it.
        var syncedSinceRestart = false
        for step in order {
            if step == "restart" {
                #expect(syncedSinceRestart, "a restart with no sync of the database file before it: \(order)")
                syncedSinceRestart = false
            } else {
                syncedSinceRestart = true
            }
        }
        // (A TRUNCATE tried in a gap between two groups may still find the writer busy: that is
        // the checkpoint thread's, reported, and not a restart.)
        let failedRestarts = reported.withLock { $0 }.filter { $0.hasPrefix("checkpoint(restart)") }
        #expect(failedRestarts.isEmpty)
        #expect(try Database(path: path).queryOne("SELECT count(*) FROM t")?.int(0) == Int64(rows))
    }

    @Test func aCheckpointThatFailsIsReportedNotSwallowed() throws {
        let reported = Mutex<[String]>([])
        let writer = try DatabaseWriter(
            path: path, onError: { operation, error in reported.withLock { $0.append("\(operation): \(error)") } })
        try writer.write { db in try db.execute("CREATE TABLE t(id INTEGER PRIMARY KEY, v TEXT)") }
        try writer.checkpointInBackground(every: .milliseconds(20))
        let pinned = try Database(path: path)
        try pinned.execute("BEGIN")
        _ = try pinned.queryOne("SELECT count(*) FROM t")  // a reader on the log: TRUNCATE must wait, and cannot
        try writer.write { db in try db.execute("INSERT INTO t(v) VALUES ('x')", []) }
        var waited = 0.0
        while reported.withLock({ $0.isEmpty }) && waited < 3 {
            Thread.sleep(forTimeInterval: 0.02)
            waited += 0.02
        }
        try pinned.execute("COMMIT")
        pinned.close()
        writer.close()
        let lines = reported.withLock { $0 }
        #expect(lines.contains { $0.hasPrefix("checkpoint(truncate): ") && $0.contains("SQLite error 5") }, "\(lines)")
    }

    // MARK: - Readers

    @Test func readersSeeCommittedSnapshotsWhileTheWriterWrites() throws {
        let writer = try makeWriter()
        let readers = try DatabaseReaderPool(path: path, count: 2)
        try writer.write { db in try db.execute("INSERT INTO t(v) VALUES (0)", []) }

        // A read transaction keeps its snapshot while the writer commits (WAL: nobody blocks).
        try readers.read { db in
            let before = try db.queryOne("SELECT count(*) FROM t")?.int(0)
            try writer.write { db in try db.execute("INSERT INTO t(v) VALUES (1)", []) }
            #expect(try db.queryOne("SELECT count(*) FROM t")?.int(0) == before)
        }
        #expect(try readers.read { db in try db.queryOne("SELECT count(*) FROM t")?.int(0) } == 2)

        // Concurrent readers during a stream of writes see counts that only grow.
        let stop = Atomic(false)
        let regressions = Atomic(0)
        let reads = Atomic(0)
        let readErrors = Mutex<[String]>([])
        let group = DispatchGroup()
        for _ in 0..<3 {
            DispatchQueue.global().async(group: group) {
                var last: Int64 = 0
                var mine = 0
                while !stop.load(ordering: .relaxed) || mine < 20 {
                    do {
                        let count = try readers.read { db in try db.queryOne("SELECT count(*) FROM t")?.int(0) } ?? -1
                        if count < last { regressions.add(1, ordering: .relaxed) }
                        last = count
                        mine += 1
                        reads.add(1, ordering: .relaxed)
                    } catch {
                        readErrors.withLock { $0.append("\(error)") }
                        return
                    }
                }
            }
        }
        for value in 2..<200 {
            try writer.write { db in try db.execute("INSERT INTO t(v) VALUES (?)", [value]) }
        }
        stop.store(true, ordering: .relaxed)
        #expect(group.wait(timeout: .now() + 10) == .success)
        #expect(regressions.load(ordering: .relaxed) == 0)
        #expect(reads.load(ordering: .relaxed) >= 60)
        #expect(readErrors.withLock { $0 } == [])
        #expect(try readers.read { db in try db.queryOne("SELECT count(*) FROM t")?.int(0) } == 200)

        let refused = #expect(throws: SQLiteError.self) {
            try readers.read { db in try db.execute("INSERT INTO t(v) VALUES (-1)", []) }
        }
        #expect(refused?.isReadOnly == true)

        // A consistent online backup from a reader while the writer keeps going.
        let copyPath = directory.file("online-backup.sqlite")
        try readers.read { db in try db.backup(to: copyPath) }
        let copy = try Database(path: copyPath)
        #expect(try copy.integrityCheck() == ["ok"])
        #expect(try copy.queryOne("SELECT count(*) FROM t")?.int(0) == 200)
        readers.close()
        #expect(throws: SQLiteError.self) { try readers.read { _ in 1 } }
        writer.close()
    }

    @Test func readerPoolOnAMissingFileIsQueryOnly() throws {
        let readers = try DatabaseReaderPool(path: directory.file("new.sqlite"), count: 1)
        #expect(throws: SQLiteError.self) { try readers.read { db in try db.execute("CREATE TABLE x(a)") } }
        readers.close()
    }
}

extension DatabaseWriterTests {
    @Test func writerReleasedFromItsOwnCompletionShutsDown() throws {
        var writer: DatabaseWriter? = try makeWriter()
        let done = DispatchSemaphore(value: 0)
        let holder = Mutex<DatabaseWriter?>(writer)
        writer!.submit(
            { db in try db.execute("INSERT INTO t(v) VALUES (7)", []) },
            completion: { _ in
                holder.withLock { $0 = nil }  // possibly the last reference, dropped on the writer thread
                done.signal()
            })
        writer = nil
        #expect(done.wait(timeout: .now() + 5) == .success)
        // The thread drains, checkpoints and closes on its own; the row is committed either way.
        #expect(try Database(path: path).queryOne("SELECT count(*) FROM t")?.int(0) == 1)
    }
}

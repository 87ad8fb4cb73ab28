import Dispatch
import Foundation
import SQLite
import Synchronization
import Testing
import Threads

/// Reads on an event loop's thread share one read transaction until the loop's wake-up ends, and
/// only while the writer has committed nothing since it began (`DatabaseReaderPool`).
@Suite struct SharedReadTransactionTests {
    let directory = TemporaryDirectory()
    var path: String { directory.file("shared.sqlite") }

    func makeWriter() throws -> DatabaseWriter {
        let writer = try DatabaseWriter(path: path)
        try writer.write { db in
            try db.execute("CREATE TABLE t(v INTEGER NOT NULL)")
            try db.execute("INSERT INTO t(v) VALUES (1)")
        }
        return writer
    }

    func makeReaders(_ writer: DatabaseWriter, count: Int = 2) throws -> DatabaseReaderPool {
        try DatabaseReaderPool(path: path, count: count, commitCount: { writer.groupsEnded })
    }

    static func rows(_ readers: DatabaseReaderPool) throws -> Int {
        let count: Int64? = try readers.read { db in try db.queryOne("SELECT count(*) FROM t")?.int(0) }
        return count.map(Int.init) ?? -1
    }

    /// Runs `body` on a thread of its own marked as a loop's, as `EventLoop.run` marks it (a
    /// test's own thread belongs to Swift's pool and must not keep the mark).
    static func onLoopThread(_ body: @escaping @Sendable (LoopIteration) throws -> Void) throws {
        let failure = Mutex<(any Error)?>(nil)
        NamedThread.start(name: "test-loop") {
            let rounds = LoopIteration()
            rounds.enter()
            defer { rounds.leave() }
            do { try body(rounds) } catch { failure.withLock { $0 = error } }
        }.join()
        if let error = failure.withLock({ $0 }) { throw error }
    }

    @Test func aLoopsReadsShareOneSnapshotUntilItsWakeUpEnds() throws {
        let writer = try makeWriter()
        let readers = try makeReaders(writer)
        let path = self.path
        // A write that is not the writer's moves no commit count: only the end of the wake-up
        // can show it to the loop, so seeing it late proves the transaction was kept.
        let insertAround = { @Sendable in
            let other = try Database(path: path)
            defer { other.close() }
            try other.execute("INSERT INTO t(v) VALUES (2)")
        }
        let seen = Mutex<[Int]>([])
        try Self.onLoopThread { rounds in
            seen.withLock { $0.append((try? Self.rows(readers)) ?? -1) }
            try insertAround()
            seen.withLock { $0.append((try? Self.rows(readers)) ?? -1) }
            rounds.end()
            seen.withLock { $0.append((try? Self.rows(readers)) ?? -1) }
        }
        #expect(seen.withLock { $0 } == [1, 1, 2])
        // Off a loop every read is its own transaction, as before.
        try insertAround()
        #expect(try Self.rows(readers) == 3)
        readers.close()
        writer.close()
    }

    @Test func aWriteAcknowledgedMidWakeUpIsSeenByTheNextRead() throws {
        let writer = try makeWriter()
        let readers = try makeReaders(writer)
        let seen = Mutex<[Int]>([])
        try Self.onLoopThread { rounds in
            seen.withLock { $0.append((try? Self.rows(readers)) ?? -1) }
            try writer.write { db in try db.execute("INSERT INTO t(v) VALUES (2)") }
            seen.withLock { $0.append((try? Self.rows(readers)) ?? -1) }
            try writer.write { db in try db.execute("INSERT INTO t(v) VALUES (3)") }
            seen.withLock { $0.append((try? Self.rows(readers)) ?? -1) }
        }
        #expect(seen.withLock { $0 } == [1, 2, 3])
        readers.close()
        writer.close()
    }

    @Test func theKeptConnectionComesBackWhenTheWakeUpEnds() throws {
        let writer = try makeWriter()
        let readers = try makeReaders(writer, count: 1)
        let otherRead = DispatchSemaphore(value: 0)
        let waitedWhileKept = Mutex<DispatchTimeoutResult?>(nil)
        try Self.onLoopThread { rounds in
            _ = try Self.rows(readers)
            // The pool's one connection is kept: a read elsewhere waits for it.
            DispatchQueue.global().async {
                _ = try? Self.rows(readers)
                otherRead.signal()
            }
            waitedWhileKept.withLock { $0 = otherRead.wait(timeout: .now() + .milliseconds(200)) }
            rounds.end()
        }
        let whileKept = waitedWhileKept.withLock { $0 }
        #expect(whileKept == .timedOut, "the other read waits while the loop keeps the connection")
        if whileKept == .timedOut {
            #expect(otherRead.wait(timeout: .now() + 10) == .success, "the end of the wake-up gave it back")
        }
        readers.close()
        writer.close()
    }

    @Test func aFailedReadGivesItsConnectionBack() throws {
        let writer = try makeWriter()
        let readers = try makeReaders(writer, count: 1)
        let seen = Mutex<[Int]>([])
        try Self.onLoopThread { rounds in
            seen.withLock { $0.append((try? Self.rows(readers)) ?? -1) }
            #expect(throws: SQLiteError.self) { try readers.read { db in try db.execute("SELECT * FROM missing") } }
            seen.withLock { $0.append((try? Self.rows(readers)) ?? -1) }
            // Closing on the loop's thread ends what it keeps rather than waiting for it.
            readers.close()
            #expect(throws: SQLiteError.self) { try Self.rows(readers) }
        }
        #expect(seen.withLock { $0 } == [1, 1])
        writer.close()
    }
}

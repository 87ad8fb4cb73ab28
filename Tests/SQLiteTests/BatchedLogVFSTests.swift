import Foundation
import SQLite
import Testing

/// The writer's VFS (`Database.Options.batchesLogWrites`): a commit's log frames go out in one
/// write, and every other connection reads each commit as soon as it returned.
@Suite struct BatchedLogVFSTests {
    let directory = TemporaryDirectory()

    private func open(batched: Bool) throws -> Database {
        var options = Database.Options()
        options.batchesLogWrites = batched
        options.synchronous = .normal
        return try Database(path: directory.file("log.sqlite"), options: options)
    }

    /// Rows of ~1 KiB, each body `fill` repeated, in whatever transaction is open.
    private func insert(_ db: Database, ids: Range<Int>, fill: Character) throws {
        for i in ids {
            try db.execute("INSERT INTO t(id, body) VALUES (?, ?)", [i, String(repeating: fill, count: 1000)])
        }
    }

    /// 100 rows of ~1 KiB in one commit: ~30 pages (the log's frames fit the buffer's 120 KiB),
    /// two writes each unbatched.
    private func insertRows(_ db: Database, from first: Int) throws {
        try db.transaction { try insert(db, ids: first..<first + 100, fill: "x") }
    }

    /// The table holds `rows` rows and the whole file checks out, read through `reader`.
    private func expectWhole(_ reader: Database, rows: Int64) throws {
        #expect(try reader.queryOne("SELECT count(*) FROM t")?.int(0) == rows)
        #expect(try reader.queryOne("PRAGMA integrity_check")?.string(0) == "ok")
    }

    @Test func aCommitWritesItsFramesOnceAndAnotherConnectionReadsThemAtOnce() throws {
        let writer = try open(batched: true)
        try writer.execute("CREATE TABLE t(id INTEGER PRIMARY KEY, body TEXT NOT NULL)")
        let reader = try open(batched: false)
        #expect(reader.batchedLogStatistics == nil)
        for round in 0..<5 {
            let before = try #require(writer.batchedLogStatistics)
            try insertRows(writer, from: round * 100)
            let after = try #require(writer.batchedLogStatistics)
            #expect(after.writes - before.writes == 1, "round \(round): \(after.writes - before.writes) writes")
            // The commit's own last write wrote its frames out, before SQLite published it: its
            // failure would have been the commit's error.
            #expect(after.publishedWithBytesPending == 0)
            // Read right after the commit, on a connection of the default VFS: every frame the
            // commit published must already be in the file.
            #expect(try reader.queryOne("SELECT count(*) FROM t")?.int(0) == Int64((round + 1) * 100))
            #expect(try reader.queryOne("PRAGMA quick_check")?.string(0) == "ok")
        }
    }

    @Test func aCommitLargerThanTheBufferAndALogRestartStayWhole() throws {
        let writer = try open(batched: true)
        try writer.execute("CREATE TABLE t(id INTEGER PRIMARY KEY, body TEXT NOT NULL)")
        // ~3 MiB in one transaction: the buffer fills and goes out many times before the commit,
        // each write of it under the default VFS's 128 KiB a call.
        try writer.transaction { try insert(writer, ids: 0..<3000, fill: "y") }
        // The log starts again from its beginning after a checkpoint that emptied it.
        _ = try writer.checkpoint(.restart)
        try insertRows(writer, from: 3000)
        writer.close()
        try expectWhole(try open(batched: false), rows: 3100)
    }

    @Test func framesSpilledBeforeACommitOrARollbackLandWhereSQLiteWroteThem() throws {
        let writer = try open(batched: true)
        try writer.execute("CREATE TABLE t(id INTEGER PRIMARY KEY, body TEXT NOT NULL)")
        try insertRows(writer, from: 0)
        // A page cache of 10 pages makes the big transaction spill frames to the log before its
        // commit; the rollback leaves them there, past the last commit, and the next commit
        // writes its own frames over them from the same offset.
        try writer.execute("PRAGMA cache_size = 10")
        try writer.execute("BEGIN IMMEDIATE")
        try insert(writer, ids: 1000..<1600, fill: "z")
        try writer.execute("ROLLBACK")
        try insertRows(writer, from: 100)
        // Spilled pages changed again before the commit: SQLite writes them over their own
        // earlier frames (an offset before the gathered bytes), then appends the rest.
        try writer.execute("BEGIN IMMEDIATE")
        try insert(writer, ids: 2000..<2600, fill: "w")
        try writer.execute("UPDATE t SET body = 'updated' WHERE id >= 2000 AND id < 2600 AND id % 7 = 0")
        try writer.execute("COMMIT")
        let reader = try open(batched: false)
        try expectWhole(reader, rows: 800)
        #expect(try reader.queryOne("SELECT count(*) FROM t WHERE body GLOB 'z*'")?.int(0) == 0)
        #expect(try reader.queryOne("SELECT count(*) FROM t WHERE body = 'updated'")?.int(0) == 86)
        writer.close()
        // And after the writer's close checkpointed the log into the database file.
        try expectWhole(reader, rows: 800)
    }

    @Test func writesWithoutTheBatchingAreCountedByNoOne() throws {
        let plain = try open(batched: false)
        try plain.execute("CREATE TABLE t(id INTEGER PRIMARY KEY, body TEXT NOT NULL)")
        try insertRows(plain, from: 0)
        #expect(plain.batchedLogStatistics == nil)
    }
}

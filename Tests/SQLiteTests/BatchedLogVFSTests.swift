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

    /// 100 rows of ~1 KiB in one commit: ~30 pages (the log's frames fit the buffer's 120 KiB),
    /// two writes each unbatched.
    private func insertRows(_ db: Database, from first: Int) throws {
        try db.transaction {
            for i in first..<first + 100 {
                try db.execute("INSERT INTO t(id, body) VALUES (?, ?)", [i, String(repeating: "x", count: 1000)])
            }
        }
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
        try writer.transaction {
            for i in 0..<3000 {
                try writer.execute("INSERT INTO t(id, body) VALUES (?, ?)", [i, String(repeating: "y", count: 1000)])
            }
        }
        // The log starts again from its beginning after a checkpoint that emptied it.
        _ = try writer.checkpoint(.restart)
        try insertRows(writer, from: 3000)
        writer.close()
        let reader = try open(batched: false)
        #expect(try reader.queryOne("SELECT count(*) FROM t")?.int(0) == 3100)
        #expect(try reader.queryOne("PRAGMA integrity_check")?.string(0) == "ok")
    }

    @Test func writesWithoutTheBatchingAreCountedByNoOne() throws {
        let plain = try open(batched: false)
        try plain.execute("CREATE TABLE t(id INTEGER PRIMARY KEY, body TEXT NOT NULL)")
        try insertRows(plain, from: 0)
        #expect(plain.batchedLogStatistics == nil)
    }
}

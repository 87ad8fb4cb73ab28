import Foundation
import Postgres
import TestSupport
import Testing

struct TestError: Error, Equatable {
    var tag: String
}

@Suite(.enabled(if: PostgresTestDatabase.isAvailable, "BUZZKIT_TEST_POSTGRES_URL is not set"))
struct TransactionTests {
    let database = try! PostgresTestDatabase.make()!

    func open() throws -> Connection {
        let db = try Connection(url: database.url)
        try db.execute("CREATE TABLE IF NOT EXISTS t(id integer PRIMARY KEY, v integer NOT NULL DEFAULT 0)")
        return db
    }

    func count(_ db: Connection) throws -> Int64 { try db.queryOne("SELECT count(*) FROM t")!.int(0) }

    @Test func commitsOnReturnAndRollsBackOnThrowRethrowingTheBodysError() throws {
        let db = try open()
        let value = try db.transaction {
            try db.execute("INSERT INTO t(id) VALUES ($1)", [1])
            return 7
        }
        #expect(value == 7)
        #expect(try count(db) == 1)
        #expect(throws: TestError(tag: "body")) {
            try db.transaction {
                try db.execute("INSERT INTO t(id) VALUES ($1)", [2])
                throw TestError(tag: "body")
            }
        }
        #expect(try count(db) == 1)
        #expect(!db.isInTransaction)
    }

    @Test func aSwallowedStatementErrorIsNotACommit() throws {
        let db = try open()
        let error = #expect(throws: PostgresError.self) {
            try db.transaction {
                try db.execute("INSERT INTO t(id) VALUES ($1)", [1])
                _ = try? db.execute("INSERT INTO t(id) VALUES ($1)", [1])  // aborts the transaction
            }
        }
        #expect(error?.sqlState == "25P02")
        #expect(try count(db) == 0)
        #expect(!db.isInTransaction)
    }

    @Test func aSavepointUndoesOnlyItself() throws {
        let db = try open()
        try db.transaction {
            try db.execute("INSERT INTO t(id) VALUES ($1)", [1])
            let error = #expect(throws: PostgresError.self) {
                try db.savepoint("one") {
                    try db.execute("INSERT INTO t(id) VALUES ($1)", [2])
                    try db.execute("INSERT INTO t(id) VALUES ($1)", [1])
                }
            }
            #expect(error?.isUniqueViolation == true)
            _ = try db.savepoint("two") { try db.execute("INSERT INTO t(id) VALUES ($1)", [3]) }
        }
        #expect(try db.query("SELECT id FROM t ORDER BY id").map { try $0.int(0) } == [1, 3])
    }

    @Test func serializationFailuresAreRetriedAndCounted() throws {
        let a = try open()
        let b = try open()
        try a.execute("INSERT INTO t(id, v) VALUES ($1, $2)", [1, 0])
        var retries: [String] = []
        var attempts = 0
        try a.retryingTransaction(.repeatableRead, attempts: 3, onRetry: { retries.append($0.sqlState) }) {
            attempts += 1
            _ = try a.queryOne("SELECT v FROM t WHERE id = 1")  // takes the snapshot
            if attempts == 1 {
                // Another session commits a change to the row after our snapshot was taken.
                try b.execute("UPDATE t SET v = v + 1 WHERE id = $1", [1])
            }
            try a.execute("UPDATE t SET v = v + 10 WHERE id = $1", [1])
        }
        #expect(attempts == 2)
        #expect(retries == ["40001"])
        #expect(try a.queryOne("SELECT v FROM t WHERE id = 1")!.int(0) == 11)
    }

    @Test func deadlocksAreReportedAs40P01() throws {
        let setup = try open()
        try setup.execute("INSERT INTO t(id) VALUES (1), (2)")
        let url = database.url
        let errors = Mutex2<[String]>([])
        let ready = DispatchSemaphore(value: 0)
        let go = DispatchSemaphore(value: 0)
        let group = DispatchGroup()
        for (first, second) in [(1, 2), (2, 1)] {
            DispatchQueue.global().async(group: group) {
                do {
                    let db = try Connection(url: url)
                    try db.transaction {
                        try db.execute("UPDATE t SET v = 1 WHERE id = $1", [first])
                        ready.signal()
                        go.wait()
                        try db.execute("UPDATE t SET v = 2 WHERE id = $1", [second])
                    }
                } catch let error as PostgresError {
                    errors.mutate { $0.append(error.sqlState) }
                } catch {
                    errors.mutate { $0.append("\(error)") }
                }
            }
        }
        ready.wait()
        ready.wait()
        go.signal()
        go.signal()
        group.wait()
        #expect(errors.value == ["40P01"])
    }
}

/// A lock-protected value for the tests' threads.
final class Mutex2<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var stored: Value
    init(_ value: Value) { stored = value }
    var value: Value { lock.withLock { stored } }
    func mutate(_ body: (inout Value) -> Void) { lock.withLock { body(&stored) } }
}

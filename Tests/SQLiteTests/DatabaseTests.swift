import CSQLite
import Foundation
import SQLite
import Testing

@Suite struct DatabaseTests {
    let directory = TemporaryDirectory()

    // MARK: - Values

    @Test(arguments: Location.allCases)
    func bindsAndReadsEveryType(_ location: Location) throws {
        let db = try location.open(directory)
        try db.execute("CREATE TABLE t(v)")
        let inputs: [(any SQLiteBindable, SQLiteValue)] = [
            (42, .integer(42)),
            (Int64.min, .integer(.min)),
            (2.5, .real(2.5)),
            ("héllo ✓", .text("héllo ✓")),
            ("", .text("")),
            (true, .integer(1)),
            (false, .integer(0)),
            ([UInt8]([0, 1, 255]), .blob([0, 1, 255])),
            ([UInt8](), .blob([])),
            (String?.none, .null),
            (Int?.some(7), .integer(7)),
            (SQLiteValue.real(-0.5), .real(-0.5)),
        ]
        for (input, _) in inputs {
            try db.execute("INSERT INTO t(v) VALUES (?)", [input])
        }
        let values = try db.query("SELECT v FROM t ORDER BY rowid").map { $0[0] }
        #expect(values == inputs.map(\.1))

        let row = try #require(try db.queryOne("SELECT 5 AS i, 'x' AS s, 1.5 AS d, x'0102' AS b, NULL AS n, 1 AS flag"))
        #expect(row.int("i") == 5)
        #expect(row.int(0) == 5)
        #expect(row.string("s") == "x")
        #expect(row.double("d") == 1.5)
        #expect(row.double("i") == 5)
        #expect(row.blob("b") == [1, 2])
        #expect(row.int("n") == nil && row.string("n") == nil && row.blob("n") == nil && row.bool("n") == nil)
        #expect(row.bool("flag") == true)
        #expect(row["S"] == .text("x"))  // SQLite identifiers are case-insensitive
        #expect(row.columnNames == ["i", "s", "d", "b", "n", "flag"])
        db.close()
        #expect(db.openStatementCount == 0)
    }

    @Test func wrongArgumentCountThrows() throws {
        let db = try Database(path: ":memory:")
        #expect(throws: SQLiteError.self) { try db.execute("SELECT ?, ?", [1]) }
        #expect(throws: SQLiteError.self) { try db.prepare("SELECT 1; SELECT 2") }
        #expect(try db.prepare("SELECT 1; -- trailing comment\n").rows().count == 1)
    }

    @Test func bindsOneOrTwoWithoutAnArray() throws {
        let db = try Database(path: ":memory:")
        let two = try db.cachedStatement("SELECT ?1 || '/' || ?2")
        try two.bind(.text("a"), .integer(7))
        #expect(try two.step())
        #expect(two.string(at: 0) == "a/7")
        two.reset()
        // The count is checked like `bind(_:)`'s: one value for two parameters, two for one.
        #expect(throws: SQLiteError.self) { try two.bind(.integer(1)) }
        let one = try db.cachedStatement("SELECT ? + 1")
        #expect(throws: SQLiteError.self) { try one.bind(.integer(1), .integer(2)) }
        try one.bind(.integer(41))
        #expect(try one.step())
        #expect(one.int(at: 0) == 42)
    }

    /// `runBinding` stores what `execute` with an argument array stores: text (empty and non-ASCII
    /// too, from inline and heap strings), NULL for a nil text, integers; the count is checked
    /// first, a parameter left unbound is NULL (never the last use's value), and the statement is
    /// reset after, even when a bind throws.
    @Test func runBindingStoresWhatAnArgumentArrayStores() throws {
        let db = try Database(path: ":memory:")
        try db.execute("CREATE TABLE t (n INTEGER, a TEXT, b TEXT)")
        let insert = "INSERT INTO t (n, a, b) VALUES (?, ?, ?)"
        let long = String(repeating: "héllo ", count: 20)
        let rows: [(Int64, String?, String?)] = [(1, "short", nil), (2, "", long), (-3, nil, "ünï")]
        for (n, a, b) in rows {
            try db.cachedStatement(insert).runBinding(3) { statement in
                try statement.bind(.integer(n), at: 1)
                try statement.bind(text: a, at: 2)
                try statement.bind(text: b, at: 3)
            }
        }
        for (n, a, b) in rows { try db.execute(insert, [n + 100, a, b]) }
        let read = "SELECT n, a, a IS NULL, b, b IS NULL FROM t WHERE n = ?"
        for (n, _, _) in rows {
            let typed = try #require(try db.queryOne(read, [n]))
            let array = try #require(try db.queryOne(read, [n + 100]))
            #expect(typed.int(0) == n)
            for column in 1...4 { #expect(typed.values[column] == array.values[column], "column \(column) of \(n)") }
        }
        #expect(try db.queryOne("SELECT a, b FROM t WHERE n = 2")?.string(0) == "")
        #expect(try db.queryOne("SELECT b FROM t WHERE n = 2")?.string(0) == long)

        // Two values for three parameters: refused before anything runs.
        #expect(throws: SQLiteError.self) {
            try db.cachedStatement(insert).runBinding(2) { try $0.bind(.integer(9), at: 1) }
        }
        // Right after a use that bound all three ("ünï" last), a body that leaves the third
        // unbound stores NULL there, not the last use's value.
        try db.cachedStatement(insert).runBinding(3) {
            try $0.bind(.integer(9), at: 1)
            try $0.bind(text: "x", at: 2)
            try $0.bind(text: "y", at: 2)
        }
        #expect(
            try db.queryOne("SELECT a, b IS NULL FROM t WHERE n = 9").map {
                "\($0.string(0) ?? "?") \($0.int(1) ?? -1)"
            }
                == "y 1")
        #expect(try db.queryOne("SELECT count(*) FROM t")?.int(0) == 7)
        // A bind past the parameters throws and runs nothing; the next use runs clean.
        #expect(throws: SQLiteError.self) {
            try db.cachedStatement(insert).runBinding(3) { try $0.bind(.integer(9), at: 4) }
        }
        #expect(try db.queryOne("SELECT count(*) FROM t")?.int(0) == 7)
        try db.cachedStatement(insert).runBinding(3) {
            try $0.bind(.integer(10), at: 1)
            try $0.bind(text: nil, at: 2)
            try $0.bind(.text("z"), at: 3)
        }
        #expect(
            try db.queryOne("SELECT a IS NULL, b FROM t WHERE n = 10").map {
                "\($0.int(0) ?? -1) \($0.string(1) ?? "?")"
            } == "1 z")
    }

    /// A cached statement keeps nothing of its last use: a parameter this use leaves unbound
    /// reads NULL, whether the last use bound it all at once or one by one, and a last use that
    /// ran to its end without a reset leaves it ready to run again.
    @Test func aCachedStatementKeepsNothingOfItsLastUse() throws {
        let db = try Database(path: ":memory:")
        let sql = "SELECT ?1 IS NULL, ?2 IS NULL, coalesce(?1, '') || coalesce(?2, '')"
        func run(_ bind: (Statement) throws -> Void) throws -> String {
            let statement = try db.cachedStatement(sql)
            defer { statement.reset() }
            try bind(statement)
            #expect(try statement.step())
            return "\(statement.int(at: 0) ?? -1) \(statement.int(at: 1) ?? -1) \(statement.string(at: 2) ?? "?")"
        }
        #expect(try run { try $0.bind([Optional("a"), Optional("b")]) } == "0 0 ab")
        // One by one, only the second: the first is NULL, not the last use's "a".
        #expect(try run { try $0.bind(.text("c"), at: 2) } == "1 0 c")
        #expect(try run { _ in } == "1 1 ")
        #expect(try run { try $0.bind(.text("d"), at: 1) } == "0 1 d")

        // Run to its end and not reset: the next use gets it, not a fresh copy, and runs.
        let counting = try db.cachedStatement("SELECT ? + 1")
        try counting.bind(.integer(1))
        #expect(try counting.step())
        #expect(try !counting.step())
        let again = try db.cachedStatement("SELECT ? + 1")
        #expect(again === counting)
        try again.bind(.integer(41))
        #expect(try again.step())
        #expect(again.int(at: 0) == 42)
    }

    @Test func lendsTextBytesOnlyForText() throws {
        let db = try Database(path: ":memory:")
        let statement = try db.cachedStatement("SELECT 'héllo', '', NULL, 5")
        #expect(try statement.step())
        #expect(Array(try statement.requiredTextBytes(at: 0)) == Array("héllo".utf8))
        #expect(try statement.requiredTextBytes(at: 1).count == 0)
        #expect(throws: RowDecodingError.self) { try statement.requiredTextBytes(at: 2) }
        #expect(throws: RowDecodingError.self) { try statement.requiredTextBytes(at: 3) }
    }

    // MARK: - Statements

    @Test(arguments: Location.allCases)
    func statementCacheReusesStatements(_ location: Location) throws {
        let db = try location.open(directory)
        try db.execute("CREATE TABLE t(a INTEGER)")
        let baseline = db.openStatementCount
        for value in 0..<50 {
            try db.execute("INSERT INTO t(a) VALUES (?)", [value])
        }
        #expect(db.openStatementCount == baseline + 1)
        do {
            let first = try db.cachedStatement("SELECT a FROM t WHERE a = ?")
            let second = try db.cachedStatement("SELECT a FROM t WHERE a = ?")
            #expect(first === second)
        }
        #expect(try db.query("SELECT count(*) FROM t")[0].int(0) == 50)

        // The same SQL nested inside its own iteration must not reset the outer statement.
        var seen: [Int64] = []
        try db.forEach("SELECT a FROM t WHERE a < ? ORDER BY a", [3]) { row in
            seen.append(row.int(0)!)
            _ = try db.query("SELECT a FROM t WHERE a < ? ORDER BY a", [1])
        }
        #expect(seen == [0, 1, 2])

        // A leaked uncached statement is visible after close: the check can fail.
        var leaked: Statement? = try db.prepare("SELECT 1")
        db.close()
        #expect(db.openStatementCount == 1)
        _ = leaked
        leaked = nil
    }

    /// The cache's front goes by where the SQL text lives; what it returns must still depend on
    /// the text alone: the same text in other storage finds the same statement, other text of the
    /// same length (a string built per call, short strings held inline) never does.
    @Test(arguments: Location.allCases)
    func statementCacheGoesByTextWhateverStorageItComesIn(_ location: Location) throws {
        let db = try location.open(directory)
        try db.execute("CREATE TABLE t(a INTEGER, b INTEGER)")
        let baseline = db.openStatementCount
        let literal = try db.cachedStatement("SELECT a FROM t WHERE a = ?1")
        for column in ["a", "b", "a", "b"] {
            // Built at run time: new storage on every pass, and "a"/"b" give texts of equal length.
            let built = ["SELECT", column, "FROM t WHERE a = ?1"].joined(separator: " ")
            let statement = try db.cachedStatement(built)
            #expect(statement.sql == built)
            #expect((statement === literal) == (column == "a"))
        }
        // Short texts live inside the String value; each must still get its own statement.
        let one = try db.cachedStatement("SELECT 1")
        let two = try db.cachedStatement("SELECT 2")
        #expect(one !== two)
        #expect(try db.cachedStatement(String("SELECT 2".reversed().reversed())) === two)
        // Short texts of one length share a front slot: taking turns must still find each its own.
        #expect(try db.cachedStatement("SELECT 1") === one)
        #expect(try db.cachedStatement("SELECT 2") === two)
        #expect(try db.cachedStatement("SELECT a FROM t WHERE a = ?1") === literal)
        #expect(db.openStatementCount == baseline + 4)
    }

    @Test(arguments: Location.allCases)
    func executesScriptsAndReportsChanges(_ location: Location) throws {
        let db = try location.open(directory)
        try db.execute(
            """
            CREATE TABLE t(id INTEGER PRIMARY KEY, a TEXT); -- comment
            INSERT INTO t(a) VALUES ('x'); INSERT INTO t(a) VALUES ('y');
            /* block comment */
            """)
        #expect(db.lastInsertRowID == 2)
        try db.execute("UPDATE t SET a = ?", ["z"])
        #expect(db.changes == 2)
        #expect(db.totalChanges == 4)
        let statement = try db.prepare("SELECT a FROM t ORDER BY id")
        #expect(try statement.step())
        #expect(statement.row().string(0) == "z")
        statement.reset()
        #expect(try statement.rows().count == 2)
        db.close()
        #expect(db.openStatementCount == 1)  // `statement` is still alive here
        _ = statement
    }

    // MARK: - Transactions

    @Test(arguments: Location.allCases)
    func transactionCommitsAndRollsBack(_ location: Location) throws {
        let db = try location.open(directory)
        try db.execute("CREATE TABLE t(a INTEGER)")
        let value = try db.transaction {
            #expect(db.isInTransaction)
            try db.execute("INSERT INTO t(a) VALUES (?)", [1])
            return "done"
        }
        #expect(value == "done")
        #expect(!db.isInTransaction)

        #expect(throws: TestError(tag: "body")) {
            try db.transaction(.deferred) {
                try db.execute("INSERT INTO t(a) VALUES (?)", [2])
                throw TestError(tag: "body")
            }
        }
        #expect(!db.isInTransaction)
        #expect(try db.query("SELECT a FROM t").map { $0.int(0) } == [1])

        // The body's error wins even when the body also broke the transaction.
        #expect(throws: TestError(tag: "first")) {
            try db.transaction(.exclusive) {
                try db.execute("ROLLBACK")
                throw TestError(tag: "first")
            }
        }
        db.close()
        #expect(db.openStatementCount == 0)
    }

    @Test(arguments: Location.allCases)
    func savepointRollsBackOnlyItsPart(_ location: Location) throws {
        let db = try location.open(directory)
        try db.execute("CREATE TABLE t(a INTEGER)")
        try db.transaction {
            try db.execute("INSERT INTO t(a) VALUES (1)", [])
            #expect(throws: TestError.self) {
                try db.savepoint("inner") {
                    try db.execute("INSERT INTO t(a) VALUES (2)", [])
                    throw TestError(tag: "inner")
                }
            }
            let kept = try db.savepoint { () throws -> Int in
                try db.execute("INSERT INTO t(a) VALUES (3)", [])
                return 3
            }
            #expect(kept == 3)
            #expect(db.isInTransaction)
        }
        #expect(try db.query("SELECT a FROM t ORDER BY a").map { $0.int(0) } == [1, 3])
        db.close()
        #expect(db.openStatementCount == 0)
    }

    // MARK: - Errors

    @Test(arguments: Location.allCases)
    func errorsCarryCodesAndSQLButNotValues(_ location: Location) throws {
        let db = try location.open(directory)
        try db.execute("CREATE TABLE users(id INTEGER PRIMARY KEY, email TEXT NOT NULL UNIQUE)")
        let insert = "INSERT INTO users(email) VALUES (?)"
        try db.execute(insert, ["secret@example.com"])
        do {
            try db.execute(insert, ["secret@example.com"])
            Issue.record("duplicate insert succeeded")
        } catch let error as SQLiteError where error.isConstraintUnique {
            #expect(error.code == 19)  // SQLITE_CONSTRAINT
            #expect(error.extendedCode == 2067)  // SQLITE_CONSTRAINT_UNIQUE
            #expect(error.isConstraint)
            #expect(error.sql == insert)
            #expect(!error.description.contains("secret"))
            #expect(!String(reflecting: error).contains("secret"))
            #expect(error.description.contains("UNIQUE constraint failed: users.email"))
        }
        // The same, as a catch pattern; a primary-key clash counts as "already exists".
        var matched = false
        do {
            try db.execute("INSERT INTO users(id, email) VALUES (?, ?)", [1, "other@example.com"])
        } catch SQLiteError.constraintUnique {
            matched = true
        }
        #expect(matched)

        let notNull = #expect(throws: SQLiteError.self) {
            try db.execute("INSERT INTO users(email) VALUES (?)", [String?.none])
        }
        #expect(notNull?.isConstraint == true && notNull?.isConstraintUnique == false)

        let syntax = #expect(throws: SQLiteError.self) { try db.query("SELEC nothing") }
        #expect(syntax?.code == 1 && syntax?.sql == "SELEC nothing")
        let scriptError = #expect(throws: SQLiteError.self) {
            try db.execute("SELECT 1; INSERT INTO missing VALUES (1); SELECT 2")
        }
        #expect(scriptError?.sql == "INSERT INTO missing VALUES (1);")
        #expect(scriptError?.message.contains("no such table: missing") == true)
        db.close()
        #expect(db.openStatementCount == 0)
        #expect(throws: SQLiteError.self) { try db.execute("SELECT 1") }
    }

    @Test func readOnlyConnectionRefusesWrites() throws {
        let path = directory.file("ro.sqlite")
        try Database(path: path).execute("CREATE TABLE t(a)")
        var options = Database.Options()
        options.readOnly = true
        let db = try Database(path: path, options: options)
        let error = #expect(throws: SQLiteError.self) { try db.execute("INSERT INTO t VALUES (1)", []) }
        #expect(error?.isReadOnly == true)
        #expect(throws: SQLiteError.self) { try Database(path: directory.file("missing/x.sqlite")) }
    }

    @Test func fileDatabaseUsesWAL() throws {
        let db = try Database(path: directory.file("wal.sqlite"))
        #expect(try db.queryOne("PRAGMA journal_mode")?.string(0) == "wal")
        #expect(try db.queryOne("PRAGMA foreign_keys")?.int(0) == 1)
        #expect(try db.queryOne("PRAGMA synchronous")?.int(0) == 2)  // FULL
        try db.checkpoint(.truncate)
    }

    // MARK: - Savepoints

    /// The temp files SQLite has open in this process (it names them `etilqs_…` and unlinks them
    /// at once, so only their descriptors show them).
    private func sqliteTempFilesOpen() throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd").compactMap { fd in
            let target = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/" + fd)
            return target.flatMap { $0.contains("etilqs_") ? $0 : nil }
        }
    }

    @Test func savepointJournalStaysInMemoryPastSQLitesDefault() throws {
        let db = try Database(path: directory.file("journal.sqlite"))
        try db.execute("CREATE TABLE t(id INTEGER PRIMARY KEY, payload BLOB)")
        try db.transaction {
            for _ in 0..<300 { try db.execute("INSERT INTO t(payload) VALUES (randomblob(1000))") }
        }
        // Every one of the ~75 pages is changed inside a savepoint: ~300 KiB of sub-journal,
        // past the 64 KiB at which SQLite's default moves it to a temp file. A spilled journal
        // shows in every round; another test's temp file (tests run in parallel) in one at most.
        var roundsWithANewTempFile = 0
        for _ in 0..<3 {
            let before = Set(try sqliteTempFilesOpen())
            try db.execute("BEGIN IMMEDIATE")
            try db.execute("SAVEPOINT job")
            try db.execute("UPDATE t SET payload = zeroblob(1000)")
            if !Set(try sqliteTempFilesOpen()).subtracting(before).isEmpty { roundsWithANewTempFile += 1 }
            try db.execute("ROLLBACK TO job")
            try db.execute("RELEASE job")
            try db.execute("COMMIT")
        }
        #expect(roundsWithANewTempFile < 3)
        // The journal did its job: the rollbacks put every page back.
        #expect(try db.queryOne("SELECT count(*) FROM t WHERE payload = zeroblob(1000)")?.int(0) == 0)
        #expect(try db.queryOne("SELECT count(*) FROM t")?.int(0) == 300)
    }

    // MARK: - Maintenance

    @Test(arguments: Location.allCases)
    func backupCopiesRowsAndPassesIntegrityCheck(_ location: Location) throws {
        let db = try location.open(directory)
        try db.execute("CREATE TABLE t(id INTEGER PRIMARY KEY, payload BLOB)")
        try db.transaction {
            for index in 0..<500 {
                try db.execute(
                    "INSERT INTO t(payload) VALUES (?)", [[UInt8](repeating: UInt8(index % 256), count: 300)])
            }
        }
        #expect(try db.integrityCheck() == ["ok"])
        let copyPath = directory.file("backup.sqlite")
        try db.backup(to: copyPath, pagesPerStep: 8)
        let copy = try Database(path: copyPath)
        #expect(try copy.integrityCheck() == ["ok"])
        #expect(
            try copy.queryOne("SELECT count(*), sum(length(payload)) FROM t").map { [$0.int(0), $0.int(1)] } == [
                500, 150_000,
            ])
        copy.close()
        db.close()
        #expect(db.openStatementCount == 0)
    }
}

@Suite struct ProcessWideSettingsTests {
    /// Memory statistics take a process-wide mutex on every SQLite allocation; with them off the
    /// counter never moves, however much a connection allocates.
    @Test func memoryStatisticsAreOff() throws {
        let db = try Database(path: ":memory:")
        try db.execute("CREATE TABLE t(v TEXT)")
        for i in 0..<200 { try db.execute("INSERT INTO t(v) VALUES (?)", [String(repeating: "x", count: i * 50)]) }
        #expect(try db.queryOne("SELECT count(*) FROM t")?.int(0) == 200)
        #expect(sqlite3_memory_used() == 0)
    }
}

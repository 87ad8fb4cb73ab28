import CSQLite

/// One SQLite connection, used by one thread at a time (it is opened with `SQLITE_OPEN_NOMUTEX`,
/// so SQLite does no locking of its own: <https://www.sqlite.org/threadsafe.html>). Not `Sendable`.
///
/// Writers go through ``DatabaseWriter``, readers through ``DatabaseReaderPool``; a bare
/// `Database` is for tests, the CLI and migrations.
///
/// ```swift
/// let db = try Database(path: "buzzkit.sqlite")
/// try db.transaction {
///     try db.execute("INSERT INTO t(a) VALUES (?)", [1])
/// }
/// let rows = try db.query("SELECT a FROM t")
/// ```
package final class Database {
    /// How a connection is opened and configured.
    package struct Options: Sendable, Hashable {
        /// `PRAGMA synchronous` levels (<https://www.sqlite.org/pragma.html#pragma_synchronous>).
        package enum Synchronous: String, Sendable, Hashable {
            /// No fsync: fast, loses data on power loss.
            case off = "OFF"
            /// In WAL mode, commits are durable once the WAL is checkpointed; may lose the last commits on power loss.
            case normal = "NORMAL"
            /// fsync the WAL on every commit: a commit that returned is on disk.
            case full = "FULL"
        }

        /// Open with `SQLITE_OPEN_READONLY` (the file must exist).
        package var readOnly = false
        /// How long a statement waits on another connection's lock before `SQLITE_BUSY`.
        package var busyTimeout: Duration = .seconds(5)
        /// `PRAGMA synchronous`.
        package var synchronous: Synchronous = .full
        /// `PRAGMA journal_mode = WAL`; skipped for `:memory:` and read-only connections.
        package var journalModeWAL = true
        /// `PRAGMA foreign_keys`.
        package var foreignKeys = true
        /// Write each commit's log frames with one `pwrite` instead of two per frame (see
        /// `BatchedLogVFS`): for the one writer connection.
        package var batchesLogWrites = false

        /// The defaults: read-write, 5 s busy timeout, `synchronous=FULL`, WAL, foreign keys on.
        package init() {}
    }

    /// The path given at open (`:memory:` for an in-memory database).
    package let path: String
    /// The `sqlite3 *`; `nil` once closed.
    private(set) var handle: OpaquePointer?
    /// Prepared statements by SQL text. Like every stored property here, reached by one thread
    /// at a time (the type's contract), so the run-time exclusivity checks are skipped: they
    /// were ~120 instructions a statement, ~1k of an uncached GET (callgrind).
    @exclusivity(unchecked) private var statementCache: [StatementKey: Statement] = [:]
    /// The same statements by where their SQL text lives: see ``RecentStatements``.
    @exclusivity(unchecked) private var recentStatements = RecentStatements()
    /// Statements still unfinalized when ``close()`` ran (see ``openStatementCount``).
    private var statementsLeftAtClose = 0

    /// Opens (creating unless read-only) and configures a connection.
    ///
    /// A connection that fails to open or to configure is closed before the error is thrown.
    /// - Parameters:
    ///   - path: A file path, or `":memory:"`.
    ///   - options: See ``Options``.
    package init(path: String, options: Options = .init()) throws {
        self.path = path
        _ = Self.processWideSettings
        var flags = SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_EXRESCODE
        flags |= options.readOnly ? SQLITE_OPEN_READONLY : (SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE)
        var connection: OpaquePointer?
        let vfs = options.batchesLogWrites ? try BatchedLogVFS.name.get() : nil
        let result = sqlite3_open_v2(path, &connection, flags, vfs)
        guard result == SQLITE_OK, let connection else {
            // sqlite3_open_v2 usually hands back a handle even on failure; it must be closed.
            let error = SQLiteError(connection: connection, resultCode: result)
            sqlite3_close_v2(connection)
            throw SQLiteError(extendedCode: error.extendedCode, message: "\(error.message): \(path)")
        }
        handle = connection
        do {
            try setUp(options)
        } catch {
            close()
            throw error
        }
    }

    /// The connection settings, in one readable list.
    private func setUp(_ options: Options) throws {
        guard let handle else { return }
        sqlite3_extended_result_codes(handle, 1)
        setBusyTimeout(options.busyTimeout)
        // Defensive mode forbids writable_schema and other ways to corrupt the file from SQL:
        // https://www.sqlite.org/c3ref/c_dbconfig_defensive.html
        _ = buzzkit_sqlite3_db_config_defensive(handle, 1)
        try execute("PRAGMA foreign_keys = \(options.foreignKeys ? "ON" : "OFF")")
        if options.journalModeWAL && !options.readOnly && !isInMemory {
            // Returns the mode in force; anything but "wal" means the switch did not happen.
            let mode = try queryOne("PRAGMA journal_mode = WAL")?.string(0)?.lowercased()
            guard mode == "wal" else {
                throw SQLiteError(
                    extendedCode: SQLITE_ERROR, message: "could not enable WAL (journal mode is \(mode ?? "?"))",
                    sql: "PRAGMA journal_mode = WAL")
            }
        }
        try execute("PRAGMA synchronous = \(options.synchronous.rawValue)")
    }

    /// Settings that SQLite only takes before its first connection opens in this process.
    private static let processWideSettings: Void = {
        _ = buzzkit_sqlite3_config_memstatus(0)
        _ = buzzkit_sqlite3_config_stmtjrnl_spill(Int32(statementJournalInMemory))
        sqlite3_initialize()
    }()

    /// How much of a savepoint's sub-journal SQLite keeps in memory before it writes it to a
    /// temp file. The writer runs every job of a group in its own savepoint, and the sub-journal
    /// holds each page the job changes as it was: ~11 pages for an identify, 16 and more now and
    /// then. At SQLite's default of 64 KiB, one such job moved the sub-journal to a file for the
    /// rest of the group, and from then on every job wrote its pages there, a `pwrite` each for
    /// a page and its number: 27 system calls and ~55 µs of the writer's kernel time per
    /// identify, more than the log itself. 8 MiB (2,000 pages) keeps any job but a bulk one in
    /// memory; bigger ones still spill, so memory stays bounded. SQLite takes the in-memory
    /// journal in one allocation of this size (its chunk size is the spill size) at a job's first
    /// journaled page and frees it at the job's `RELEASE`: one `malloc` and one `free` of 8 MiB a
    /// job. glibc serves them from the writer's arena (no `mmap` or `madvise` once warm), and only
    /// the pages written count towards RSS. Each does make glibc consolidate its small free
    /// chunks: `malloc_consolidate` was 2 % of the writer's samples under identify, and with glibc
    /// keeping no such chunks (`mxfast=0`) the writer ran 0.9 % fewer instructions (bench/README,
    /// "What an identify and an uncached GET spend beyond SQLite").
    private static let statementJournalInMemory = 8 << 20

    private var isInMemory: Bool { path == ":memory:" || path.isEmpty || path.hasPrefix("file::memory:") }

    deinit {
        close()
    }

    /// Finalizes cached statements, then closes with `sqlite3_close_v2`. Idempotent.
    ///
    /// Statements still held elsewhere keep the connection alive as a "zombie" until they are
    /// deinitialized (<https://www.sqlite.org/c3ref/close.html>); their number is recorded in
    /// ``openStatementCount``.
    package func close() {
        guard let handle else { return }
        statementCache.removeAll()
        recentStatements = RecentStatements()
        statementsLeftAtClose = openStatementCount
        sqlite3_close_v2(handle)
        self.handle = nil
    }

    /// The number of unfinalized statements of this connection (`sqlite3_next_stmt`); cached
    /// statements count. After ``close()``, the number that were still alive when it ran,
    /// so tests can assert that nothing leaked.
    package var openStatementCount: Int {
        guard let handle else { return statementsLeftAtClose }
        var count = 0
        var statement = sqlite3_next_stmt(handle, nil)
        while let current = statement {
            count += 1
            statement = sqlite3_next_stmt(handle, current)
        }
        return count
    }

    /// When this connection batches its log's writes (``Options/batchesLogWrites``) and its log
    /// is open: the `pwrite` calls the log made, and the commits published while some of their
    /// frames were still gathered (see `BatchedLogVFS`). Nil otherwise. For tests.
    package var batchedLogStatistics: (writes: Int, publishedWithBytesPending: Int)? {
        guard let handle else { return nil }
        return BatchedLogVFS.logStatistics(handle)
    }

    /// The open handle, or a `SQLITE_MISUSE` error after ``close()``.
    func openHandle(sql: String? = nil) throws -> OpaquePointer {
        guard let handle else { throw SQLiteError.misuse("database connection is closed", sql: sql) }
        return handle
    }

    // MARK: - Statements

    /// Prepares one statement, not cached. Trailing text after the first statement is an error.
    /// - Parameter sql: One SQL statement, with `?` placeholders.
    package func prepare(_ sql: String) throws -> Statement {
        let handle = try openHandle(sql: sql)
        var statement: OpaquePointer?
        var trailing = false
        let result = sql.withCString { text in
            var tail: UnsafePointer<CChar>?
            let result = sqlite3_prepare_v2(handle, text, -1, &statement, &tail)
            if let tail { trailing = Self.hasStatementText(tail) }
            return result
        }
        guard result == SQLITE_OK else {
            throw SQLiteError(connection: handle, resultCode: result, sql: sql)
        }
        guard let statement else {
            throw SQLiteError.misuse("no SQL statement to prepare", sql: sql)
        }
        guard !trailing else {
            sqlite3_finalize(statement)
            throw SQLiteError.misuse("several statements given where one was expected", sql: sql)
        }
        return Statement(handle: statement, sql: sql)
    }

    /// True when `text` holds more than whitespace, semicolons and comments.
    private static func hasStatementText(_ text: UnsafePointer<CChar>) -> Bool {
        var pointer = text
        while pointer.pointee != 0 {
            switch UInt8(bitPattern: pointer.pointee) {
            case UInt8(ascii: " "), UInt8(ascii: "\n"), UInt8(ascii: "\t"), UInt8(ascii: "\r"), UInt8(ascii: ";"):
                pointer += 1
            case UInt8(ascii: "-") where pointer[1] == CChar(UInt8(ascii: "-")):
                while pointer.pointee != 0 && pointer.pointee != CChar(UInt8(ascii: "\n")) { pointer += 1 }
            case UInt8(ascii: "/") where pointer[1] == CChar(UInt8(ascii: "*")):
                pointer += 2
                while pointer.pointee != 0
                    && !(pointer.pointee == CChar(UInt8(ascii: "*")) && pointer[1] == CChar(UInt8(ascii: "/")))
                {
                    pointer += 1
                }
                if pointer.pointee != 0 { pointer += 2 }
            default:
                return true
            }
        }
        return false
    }

    /// The cached statement for this SQL text, ready to run with no parameter bound (one this
    /// use leaves unbound reads NULL); prepared on first use.
    ///
    /// If the cached statement is still being stepped (the same SQL nested inside a
    /// ``forEach(_:_:_:)`` body), a fresh uncached statement is returned instead of resetting it.
    /// - Parameter sql: One SQL statement; the exact text is the cache key.
    package func cachedStatement(_ sql: String) throws -> Statement {
        // The front asked, then told on a miss (`statementAfterMiss`): a look-up closure captured
        // `self`, a retain and a release every statement.
        let statement = try recentStatements.statement(for: sql) ?? statementAfterMiss(sql)
        if statement.isRunning { return try prepare(sql) }
        statement.prepareForReuse()
        return statement
    }

    /// The statement for `sql` from the cache behind the front (prepared if new), then
    /// remembered by the front.
    @inline(never)
    private func statementAfterMiss(_ sql: String) throws -> Statement {
        let statement: Statement
        if let cached = statementCache[StatementKey(sql)] {
            statement = cached
        } else {
            statement = try prepare(sql)
            statementCache[StatementKey(sql)] = statement
        }
        recentStatements.remember(statement, for: sql)
        return statement
    }

    /// The SQL text of every statement in the cache: what this connection has run, so tests can
    /// check each one's query plan.
    package var cachedSQL: [String] { statementCache.keys.map(\.sql) }

    // MARK: - Running SQL

    /// Runs one or several `;`-separated statements without parameters (schema, pragmas).
    /// - Parameter sql: The SQL script.
    package func execute(_ sql: String) throws {
        let handle = try openHandle(sql: sql)
        try sql.withCString { script in
            var next: UnsafePointer<CChar>? = script
            while let current = next, current.pointee != 0 {
                var statement: OpaquePointer?
                var tail: UnsafePointer<CChar>?
                let result = sqlite3_prepare_v2(handle, current, -1, &statement, &tail)
                guard result == SQLITE_OK else {
                    throw SQLiteError(connection: handle, resultCode: result, sql: Self.trimmed(current, upTo: tail))
                }
                next = tail
                guard let statement else { continue }  // only whitespace or comments
                defer { sqlite3_finalize(statement) }
                var step = sqlite3_step(statement)
                while step == SQLITE_ROW { step = sqlite3_step(statement) }
                guard step == SQLITE_DONE else {
                    throw SQLiteError(connection: handle, resultCode: step, sql: Self.trimmed(current, upTo: tail))
                }
            }
        }
    }

    /// The text of one statement of a script, for error messages.
    private static func trimmed(_ start: UnsafePointer<CChar>, upTo end: UnsafePointer<CChar>?) -> String {
        let text: String
        if let end, end > start {
            let bytes = UnsafeRawBufferPointer(start: start, count: end - start)
            text = String(decoding: bytes, as: UTF8.self)
        } else {
            text = String(cString: start)
        }
        return text.trimmingWhitespace
    }

    /// Runs one statement through the statement cache, stepped to completion.
    /// - Parameters:
    ///   - sql: One statement with `?` placeholders.
    ///   - arguments: One value per placeholder.
    package func execute(_ sql: String, _ arguments: [any SQLiteBindable]) throws {
        try cachedStatement(sql).run(arguments)
    }

    /// Runs a cached query and copies every row.
    /// - Parameters:
    ///   - sql: One statement with `?` placeholders.
    ///   - arguments: One value per placeholder.
    package func query(_ sql: String, _ arguments: [any SQLiteBindable] = []) throws -> [Row] {
        try cachedStatement(sql).rows(arguments)
    }

    /// Runs a cached query and returns its first row, or `nil` when there is none.
    /// - Parameters:
    ///   - sql: One statement with `?` placeholders.
    ///   - arguments: One value per placeholder.
    package func queryOne(_ sql: String, _ arguments: [any SQLiteBindable] = []) throws -> Row? {
        let statement = try cachedStatement(sql)
        defer { statement.reset() }
        try statement.bind(arguments)
        return try statement.step() ? statement.row() : nil
    }

    /// Streams the rows of a cached query to `body` without building an array.
    /// - Parameters:
    ///   - sql: One statement with `?` placeholders.
    ///   - arguments: One value per placeholder.
    ///   - body: Called once per row; throwing stops the iteration and is rethrown.
    package func forEach(
        _ sql: String, _ arguments: [any SQLiteBindable] = [], _ body: (Row) throws -> Void
    ) throws {
        let statement = try cachedStatement(sql)
        defer { statement.reset() }
        try statement.bind(arguments)
        while try statement.step() {
            try body(statement.row())
        }
    }

    // MARK: - Connection state

    /// The rowid of the most recent successful `INSERT` on this connection.
    package var lastInsertRowID: Int64 {
        handle.map { sqlite3_last_insert_rowid($0) } ?? 0
    }

    /// Rows changed by the most recent `INSERT`, `UPDATE` or `DELETE` (`sqlite3_changes64`).
    package var changes: Int {
        handle.map { Int(sqlite3_changes64($0)) } ?? 0
    }

    /// Rows changed since the connection opened (`sqlite3_total_changes64`).
    package var totalChanges: Int {
        handle.map { Int(sqlite3_total_changes64($0)) } ?? 0
    }

    /// Virtual-machine steps run so far by this connection's cached statements
    /// (`SQLITE_STMTSTATUS_VM_STEP`, <https://www.sqlite.org/c3ref/c_stmtstatus_counter.html>):
    /// a deterministic measure of how much work a job did, for tests that must show a cost does
    /// not grow with the data (rows read, index probes and writes all take steps).
    package var cachedStatementSteps: Int {
        statementCache.values.reduce(0) { total, statement in
            total + Int(sqlite3_stmt_status(statement.handle, SQLITE_STMTSTATUS_VM_STEP, 0))
        }
    }

    /// Times this connection's cached statements ran to completion or were reset after a step
    /// (`SQLITE_STMTSTATUS_RUN`): how many statements a job issued, for tests of batching.
    package var cachedStatementRuns: Int {
        statementCache.values.reduce(0) { total, statement in
            total + Int(sqlite3_stmt_status(statement.handle, SQLITE_STMTSTATUS_RUN, 0))
        }
    }

    /// True inside `BEGIN … COMMIT` or a savepoint (`!sqlite3_get_autocommit`).
    package var isInTransaction: Bool {
        handle.map { sqlite3_get_autocommit($0) == 0 } ?? false
    }
}

extension String {
    /// The string without leading and trailing ASCII whitespace (no Foundation needed).
    var trimmingWhitespace: String {
        let isSpace: (Character) -> Bool = { $0 == " " || $0 == "\n" || $0 == "\t" || $0 == "\r" || $0 == "\r\n" }
        guard let first = firstIndex(where: { !isSpace($0) }), let last = lastIndex(where: { !isSpace($0) }) else {
            return ""
        }
        return String(self[first...last])
    }
}

/// A front for the statement cache keyed by where the SQL text's bytes live, not by the text.
///
/// SQL comes from string literals and `static let`s, so the same call site passes the same
/// storage every time, and comparing an address and a length is all a lookup needs. Hashing and
/// comparing the text cost ~1.2k instructions per statement (callgrind, identify: 17 statements,
/// ~5 % of the request). Each slot keeps its `String`, so its storage cannot be freed and reused
/// for other text while the slot points at it; SQL built per call (other storage each time) just
/// misses here and is found by text. Text of 15 bytes or less is kept inside the `String` value
/// itself (its "address" would be a temporary copy's), so it has slots of its own, one per
/// length, compared by value: for two such strings that is a comparison of two words. (It went
/// by text: `SAVEPOINT "job"`, run by every write job, cost ~1.3k instructions to look up.)
/// Direct-mapped and fixed in size: nothing to evict.
struct RecentStatements {
    /// Where a slot's SQL lives and how long it is: plain values, compared without touching the
    /// slot's `String` or `Statement`.
    private struct Key: Equatable {
        var address: UInt
        var count: Int
    }
    private static let size = 256
    private var keys = [Key?](repeating: nil, count: size)
    /// Each slot's SQL, kept so its storage is not freed and reused for other text meanwhile.
    private var texts = [String?](repeating: nil, count: size)
    private var statements = [Statement?](repeating: nil, count: size)
    /// Short SQL by its length (0–15 bytes), with its statement.
    private var shortTexts = [String?](repeating: nil, count: 16)
    private var shortStatements = [Statement?](repeating: nil, count: 16)

    /// The statement remembered for `sql`: when `sql` is the storage a slot holds (or, when
    /// short, the same text).
    func statement(for sql: String) -> Statement? {
        let count = sql.utf8.count
        if count < shortTexts.count {
            // A short text is held inside its `String`: comparing two is comparing two words.
            return shortTexts[count] == sql ? shortStatements[count] : nil
        }
        guard let key = Self.key(sql, count: count) else { return nil }
        let index = Self.index(key)
        return keys[index] == key ? statements[index] : nil
    }

    /// Remembers `statement` for `sql` in its slot, in place of what the slot held.
    mutating func remember(_ statement: Statement, for sql: String) {
        let count = sql.utf8.count
        if count < shortTexts.count {
            (shortTexts[count], shortStatements[count]) = (sql, statement)
            return
        }
        // SQL not in contiguous storage has no slot: it is found by text each time.
        guard let key = Self.key(sql, count: count) else { return }
        let index = Self.index(key)
        (keys[index], texts[index], statements[index]) = (key, sql, statement)
    }

    private static func key(_ sql: String, count: Int) -> Key? {
        guard let address = sql.utf8.withContiguousStorageIfAvailable({ UInt(bitPattern: $0.baseAddress) }),
            address != 0
        else { return nil }
        return Key(address: address, count: count)
    }

    /// Storage is at least 8-byte aligned: the low bits that never vary are dropped.
    private static func index(_ key: Key) -> Int {
        Int(truncatingIfNeeded: (key.address >> 4) ^ (key.address >> 12)) & (size - 1)
    }
}

/// The statement cache's key: the SQL text, hashed by its length and 16 sampled bytes instead of
/// all of it. Hashing the whole text (SipHash over 50–400 bytes, for every statement run) was a
/// visible share of the writer thread's time. Equality still compares the full text, and the same
/// literal compares by pointer, so a sampled collision costs one comparison, never a wrong hit.
struct StatementKey: Hashable {
    let sql: String

    init(_ sql: String) { self.sql = sql }

    static func == (a: StatementKey, b: StatementKey) -> Bool { a.sql == b.sql }

    func hash(into hasher: inout Hasher) {
        var sql = sql
        sql.withUTF8 { bytes in
            hasher.combine(bytes.count)
            guard !bytes.isEmpty else { return }
            let samples = Swift.min(16, bytes.count)
            var word: UInt64 = 0
            var packed: (UInt64, UInt64) = (0, 0)
            for i in 0..<samples {
                word = word << 8 | UInt64(bytes[(bytes.count - 1) * i / Swift.max(1, samples - 1)])
                if i == 7 { packed.0 = word; word = 0 }
            }
            packed.1 = word
            hasher.combine(packed.0)
            hasher.combine(packed.1)
        }
    }
}

import CSQLite

/// An error returned by SQLite: primary and extended result code, SQLite's message, and the SQL.
///
/// The description never contains bound values (they may be e-mail addresses or tokens and
/// must not reach logs through an error); the type does not even store them.
///
/// ```swift
/// do { try db.execute("INSERT INTO users(email) VALUES (?)", [email]) }
/// catch let error as SQLiteError where error.isConstraintUnique { … }
/// catch SQLiteError.constraintUnique { … }   // the same, as a pattern
/// ```
package struct SQLiteError: Error, CustomStringConvertible {
    /// The primary result code (`SQLITE_CONSTRAINT`, `SQLITE_BUSY`, …): the low 8 bits of ``extendedCode``.
    package var code: Int32
    /// The extended result code (`SQLITE_CONSTRAINT_UNIQUE`, …); see <https://www.sqlite.org/rescode.html>.
    package var extendedCode: Int32
    /// SQLite's error message (`sqlite3_errmsg`) or ours for wrapper-level failures.
    package var message: String
    /// The SQL text being prepared or run, if any (with `?` placeholders, never the values).
    package var sql: String?

    /// Creates an error from an extended result code; the primary code is derived from it.
    /// - Parameters:
    ///   - extendedCode: The (possibly extended) result code.
    ///   - message: The message to show.
    ///   - sql: The statement text, without bound values.
    package init(extendedCode: Int32, message: String, sql: String? = nil) {
        self.code = extendedCode & 0xFF
        self.extendedCode = extendedCode
        self.message = message
        self.sql = sql
    }

    /// Reads the last error of a connection (`sqlite3_extended_errcode`, `sqlite3_errmsg`).
    init(connection: OpaquePointer?, resultCode: Int32, sql: String? = nil) {
        let extended = connection.map { sqlite3_extended_errcode($0) } ?? resultCode
        // If the connection's last error is not the one we were handed (can happen after
        // sqlite3_reset or backup calls), trust the result code we got.
        let code = (extended & 0xFF) == (resultCode & 0xFF) ? extended : resultCode
        let message =
            connection.flatMap { sqlite3_errmsg($0) }.map { String(cString: $0) }
            ?? String(cString: sqlite3_errstr(resultCode))
        self.init(extendedCode: code, message: message, sql: sql)
    }

    /// `SQLite error 19 (extended 2067): UNIQUE constraint failed: users.email — in `INSERT …``.
    package var description: String {
        var text = "SQLite error \(code) (extended \(extendedCode)): \(message)"
        if let sql { text += " — in `\(sql)`" }
        return text
    }

    // MARK: - Classification

    /// Any constraint violation (`SQLITE_CONSTRAINT`).
    package var isConstraint: Bool { code == SQLITE_CONSTRAINT }
    /// A `UNIQUE` or `PRIMARY KEY` violation: both mean "a row with this key already exists".
    package var isConstraintUnique: Bool {
        extendedCode == SQLiteError.constraintUniqueCode || extendedCode == SQLiteError.constraintPrimaryKeyCode
    }
    /// A `FOREIGN KEY` violation.
    package var isConstraintForeignKey: Bool { extendedCode == SQLiteError.constraintForeignKeyCode }
    /// The database was locked by another connection for longer than the busy timeout (`SQLITE_BUSY`).
    package var isBusy: Bool { code == SQLITE_BUSY }
    /// The disk or the database's size limit is full (`SQLITE_FULL`).
    package var isFull: Bool { code == SQLITE_FULL }
    /// A write was attempted on a read-only database or connection (`SQLITE_READONLY`).
    package var isReadOnly: Bool { code == SQLITE_READONLY }
    /// The operating system reported an I/O error (`SQLITE_IOERR`).
    package var isIOError: Bool { code == SQLITE_IOERR }

    // Extended codes are `(PRIMARY | (n << 8))` macros, which Swift does not import.
    // Values from https://www.sqlite.org/rescode.html.
    static let constraintForeignKeyCode: Int32 = SQLITE_CONSTRAINT | (3 << 8)
    static let constraintPrimaryKeyCode: Int32 = SQLITE_CONSTRAINT | (6 << 8)
    static let constraintUniqueCode: Int32 = SQLITE_CONSTRAINT | (8 << 8)

    /// A wrapper-level misuse (wrong argument count, closed connection…), reported as `SQLITE_MISUSE`.
    static func misuse(_ message: String, sql: String? = nil) -> SQLiteError {
        SQLiteError(extendedCode: SQLITE_MISUSE, message: message, sql: sql)
    }

    // MARK: - Patterns

    /// A predicate usable as a `catch` pattern: `catch SQLiteError.constraintUnique`.
    package struct Pattern: Sendable {
        let matches: @Sendable (SQLiteError) -> Bool

        /// True when `error` is a ``SQLiteError`` that satisfies the pattern.
        package static func ~= (pattern: Pattern, error: any Error) -> Bool {
            guard let error = error as? SQLiteError else { return false }
            return pattern.matches(error)
        }
    }

    /// Matches ``isConstraint``.
    package static let constraint = Pattern { $0.isConstraint }
    /// Matches ``isConstraintUnique``.
    package static let constraintUnique = Pattern { $0.isConstraintUnique }
    /// Matches ``isConstraintForeignKey``.
    package static let constraintForeignKey = Pattern { $0.isConstraintForeignKey }
    /// Matches ``isBusy``.
    package static let busy = Pattern { $0.isBusy }
    /// Matches ``isFull``.
    package static let full = Pattern { $0.isFull }
    /// Matches ``isReadOnly``.
    package static let readOnly = Pattern { $0.isReadOnly }
    /// Matches ``isIOError``.
    package static let ioError = Pattern { $0.isIOError }
}

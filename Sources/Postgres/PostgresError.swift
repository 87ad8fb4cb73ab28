import CPostgreSQL

/// An error from libpq or the server: the SQLSTATE, the server's message, and the SQL text.
///
/// Bound values are never stored (they may be e-mail addresses or tokens and must not reach
/// logs through an error). The server's `DETAIL` field is dropped for the same reason: for a
/// unique violation it quotes the duplicate key (`Key (email)=(a@b.c) already exists`).
///
/// ```swift
/// do { try connection.execute("INSERT INTO users(email) VALUES ($1)", [email]) }
/// catch PostgresError.uniqueViolation { … }
/// catch PostgresError.serializationFailure, PostgresError.deadlockDetected { retry }
/// ```
package struct PostgresError: Error, CustomStringConvertible {
    /// The five-character SQLSTATE (<https://www.postgresql.org/docs/15/errcodes-appendix.html>);
    /// `08006` when the connection is lost. Wrapper-level failures use the class the server
    /// would use (`08P01` misuse, `22000` a column that does not decode).
    package var sqlState: String
    /// The server's primary message, or libpq's for connection failures.
    package var message: String
    /// The SQL text being prepared or run, if any (with `$n` placeholders, never the values).
    package var sql: String?

    /// Creates an error.
    /// - Parameters:
    ///   - sqlState: The SQLSTATE.
    ///   - message: The message to show.
    ///   - sql: The statement text, without values.
    package init(sqlState: String, message: String, sql: String? = nil) {
        self.sqlState = sqlState
        self.message = message
        self.sql = sql
    }

    /// Reads the error of a failed result (`PQresultErrorField`), falling back to the connection's message.
    init(result: OpaquePointer?, connection: OpaquePointer?, sql: String?) {
        func field(_ code: Character) -> String? {
            guard let result, let value = PQresultErrorField(result, Int32(code.asciiValue!)) else { return nil }
            return String(cString: value)
        }
        let state = field("C") ?? (connection.map { PQstatus($0) == CONNECTION_BAD } == true ? "08006" : "XX000")
        let message =
            field("M")
            ?? connection.flatMap { PQerrorMessage($0) }.map { String(cString: $0).trimmingNewlines }
            ?? "unknown libpq error"
        self.init(sqlState: state, message: message.isEmpty ? "unknown libpq error" : message, sql: sql)
    }

    /// `PostgreSQL error 23505: duplicate key value violates unique constraint "users_email_key" — in `INSERT …``.
    package var description: String {
        var text = "PostgreSQL error \(sqlState): \(message)"
        if let sql { text += " — in `\(sql)`" }
        return text
    }

    // MARK: - Classification

    /// `40001`: a serializable (or repeatable read) transaction lost a race; retry it whole.
    package var isSerializationFailure: Bool { sqlState == "40001" }
    /// `40P01`: the server broke a deadlock by failing this transaction; retry it whole.
    package var isDeadlock: Bool { sqlState == "40P01" }
    /// Either of the two above: the transaction may succeed if run again from the start.
    package var isRetryable: Bool { isSerializationFailure || isDeadlock }
    /// `23505`: a row with this unique key already exists.
    package var isUniqueViolation: Bool { sqlState == "23505" }
    /// `23503`: a foreign key points at a missing row (or a referenced row was deleted).
    package var isForeignKeyViolation: Bool { sqlState == "23503" }
    /// Class `23`: any integrity constraint.
    package var isConstraint: Bool { sqlState.hasPrefix("23") }
    /// Class `08` (connection exceptions), `57P01`–`57P03` (the server shutting down or
    /// starting): the connection is gone or about to be; a new one may work.
    package var isConnectionFailure: Bool {
        sqlState.hasPrefix("08") || sqlState == "57P01" || sqlState == "57P02" || sqlState == "57P03"
    }
    /// Class `53` (insufficient resources: disk full, out of memory, too many connections).
    package var isInsufficientResources: Bool { sqlState.hasPrefix("53") }
    /// `25006`: a write in a read-only transaction, or on a standby.
    package var isReadOnly: Bool { sqlState == "25006" }
    /// Class `22` (data exceptions), including a column that does not decode as asked.
    package var isDataException: Bool { sqlState.hasPrefix("22") }

    /// A wrapper-level misuse (wrong argument count, closed connection), reported like the
    /// server reports a protocol violation.
    static func misuse(_ message: String, sql: String? = nil) -> PostgresError {
        PostgresError(sqlState: "08P01", message: message, sql: sql)
    }

    /// A column that does not decode as asked (`NULL` where a value is required, bad text).
    static func decoding(_ message: String, sql: String?) -> PostgresError {
        PostgresError(sqlState: "22000", message: message, sql: sql)
    }

    // MARK: - Patterns

    /// A predicate usable as a `catch` pattern: `catch PostgresError.uniqueViolation`.
    package struct Pattern: Sendable {
        let matches: @Sendable (PostgresError) -> Bool

        /// True when `error` is a ``PostgresError`` that satisfies the pattern.
        package static func ~= (pattern: Pattern, error: any Error) -> Bool {
            guard let error = error as? PostgresError else { return false }
            return pattern.matches(error)
        }
    }

    /// Matches ``isSerializationFailure`` (`40001`).
    package static let serializationFailure = Pattern { $0.isSerializationFailure }
    /// Matches ``isDeadlock`` (`40P01`).
    package static let deadlockDetected = Pattern { $0.isDeadlock }
    /// Matches ``isRetryable``.
    package static let retryable = Pattern { $0.isRetryable }
    /// Matches ``isUniqueViolation`` (`23505`).
    package static let uniqueViolation = Pattern { $0.isUniqueViolation }
    /// Matches ``isForeignKeyViolation`` (`23503`).
    package static let foreignKeyViolation = Pattern { $0.isForeignKeyViolation }
    /// Matches ``isConnectionFailure``.
    package static let connectionFailure = Pattern { $0.isConnectionFailure }
    /// Matches any error with this exact SQLSTATE.
    package static func state(_ sqlState: String) -> Pattern { Pattern { $0.sqlState == sqlState } }
}

extension String {
    /// Without trailing newlines (libpq ends its messages with one).
    var trimmingNewlines: String {
        var text = self
        while text.last == "\n" || text.last == "\r" { text.removeLast() }
        return text
    }
}

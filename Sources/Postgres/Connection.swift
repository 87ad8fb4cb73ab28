import CPostgreSQL
import Glibc

/// One libpq connection (`PGconn`), used by one thread at a time. Not `Sendable`.
///
/// Statements run through ``query(_:_:)`` and ``execute(_:_:)`` are prepared once per
/// connection (`PQprepare`) and then run with `PQexecPrepared`, parameters in text format;
/// ``execute(_:)`` runs a parameterless script with the simple query protocol.
///
/// ```swift
/// let connection = try Connection(url: "postgres://buzzkit@127.0.0.1:5432/buzzkit")
/// try connection.transaction {
///     try connection.execute("INSERT INTO t(a) VALUES ($1)", [1])
/// }
/// let rows = try connection.query("SELECT a FROM t")
/// ```
package final class Connection {
    /// The `PGconn *`; `nil` once closed.
    private var handle: OpaquePointer?
    /// Server-side prepared statement names by SQL text.
    private var prepared: [String: String] = [:]

    /// Connects with a `postgres://` or `postgresql://` URL or a `key=value` string (libpq's
    /// defaults apply: <https://www.postgresql.org/docs/15/libpq-connect.html#LIBPQ-CONNSTRING>).
    ///
    /// A connection that fails is closed before the error is thrown; the error carries
    /// libpq's message, which names host and port but never the password.
    /// - Parameter url: The connection string.
    package init(url: String) throws {
        let connection = PQconnectdb(url)
        guard let connection, PQstatus(connection) == CONNECTION_OK else {
            let message = connection.flatMap { PQerrorMessage($0) }.map { String(cString: $0).trimmingNewlines }
            PQfinish(connection)
            throw PostgresError(sqlState: "08001", message: message ?? "could not connect")
        }
        handle = connection
        do {
            try setUp()
        } catch {
            close()
            throw error
        }
    }

    /// The session settings, in one readable list.
    private func setUp() throws {
        // Timestamps are stored as text by the schema; UTC keeps any server-side now() readable.
        try execute("SET TIME ZONE 'UTC'")
        // Notices (e.g. "relation already exists, skipping") would go to stderr as raw text;
        // our logs are one JSON object a line.
        try execute("SET client_min_messages = warning")
    }

    deinit {
        close()
    }

    /// Closes the connection (`PQfinish`). Idempotent.
    package func close() {
        guard let handle else { return }
        PQfinish(handle)
        self.handle = nil
        prepared.removeAll()
    }

    /// True while the connection is open and healthy (`PQstatus == CONNECTION_OK`). A
    /// connection whose server went away reports false after the failed call.
    package var isHealthy: Bool {
        guard let handle else { return false }
        return PQstatus(handle) == CONNECTION_OK
    }

    /// True inside `BEGIN … COMMIT`, including an aborted transaction waiting for `ROLLBACK`.
    package var isInTransaction: Bool {
        guard let handle else { return false }
        let status = PQtransactionStatus(handle)
        return status == PQTRANS_INTRANS || status == PQTRANS_INERROR || status == PQTRANS_ACTIVE
    }

    /// The server process serving this connection (`PQbackendPID`), for diagnostics and tests.
    package var backendPID: Int32 { handle.map { PQbackendPID($0) } ?? 0 }

    /// The socket, for waiting on notifications (`PQsocket`); -1 when closed.
    var socket: Int32 { handle.map { PQsocket($0) } ?? -1 }

    /// The open handle, or a misuse error after ``close()``.
    func openHandle(sql: String? = nil) throws -> OpaquePointer {
        guard let handle else { throw PostgresError.misuse("connection is closed", sql: sql) }
        return handle
    }

    // MARK: - Running SQL

    /// Runs a parameterless script of one or more `;`-separated statements (schema, `SET`,
    /// `LISTEN`) with the simple query protocol, in one round trip.
    /// - Parameter script: The SQL.
    package func execute(_ script: String) throws {
        let handle = try openHandle(sql: script)
        // PQexec returns only the last statement's result; an earlier failure stops the script
        // and is that last result.
        let result = PQexec(handle, script)
        defer { PQclear(result) }
        try check(result, handle: handle, sql: script)
    }

    /// Runs one statement with parameters, prepared on first use.
    /// - Parameters:
    ///   - sql: One statement with `$1`, `$2`… placeholders.
    ///   - arguments: One value per placeholder.
    /// - Returns: The number of rows the statement affected (`PQcmdTuples`), 0 when it reports none.
    @discardableResult
    package func execute(_ sql: String, _ arguments: [any PostgresBindable]) throws -> Int {
        let result = try run(sql, arguments)
        return result.affectedRows
    }

    /// Runs a query with parameters, prepared on first use, and returns its rows.
    /// - Parameters:
    ///   - sql: One statement with `$n` placeholders.
    ///   - arguments: One value per placeholder.
    package func query(_ sql: String, _ arguments: [any PostgresBindable] = []) throws -> QueryResult {
        try run(sql, arguments)
    }

    /// Runs a query and returns its first row, or `nil` when there is none.
    package func queryOne(_ sql: String, _ arguments: [any PostgresBindable] = []) throws -> PostgresRow? {
        let result = try run(sql, arguments)
        return result.count > 0 ? result[0] : nil
    }

    /// The SQL texts prepared on this connection (tests check the cache is used).
    package var preparedSQL: [String] { Array(prepared.keys) }

    /// Prepares (once) and runs `sql`.
    private func run(_ sql: String, _ arguments: [any PostgresBindable]) throws -> QueryResult {
        let handle = try openHandle(sql: sql)
        let name = try preparedName(sql, handle: handle)
        let texts = arguments.map { $0.postgresValue.wireText }
        // libpq copies the parameter text into its output buffer before returning, so the
        // C strings only need to live for the call.
        let pointers: [UnsafePointer<CChar>?] = texts.map { $0.map { UnsafePointer(strdup($0)!) } }
        defer { for pointer in pointers { free(UnsafeMutablePointer(mutating: pointer)) } }
        let result = PQexecPrepared(handle, name, Int32(pointers.count), pointers, nil, nil, 0)
        do {
            try check(result, handle: handle, sql: sql)
        } catch {
            PQclear(result)
            throw error
        }
        return QueryResult(result!, sql: sql)
    }

    /// The server-side name of `sql`, preparing it on first use. Prepared statements are
    /// per session and not transactional: a rolled-back transaction keeps them.
    private func preparedName(_ sql: String, handle: OpaquePointer) throws -> String {
        if let name = prepared[sql] { return name }
        let name = "s\(prepared.count + 1)"
        let result = PQprepare(handle, name, sql, 0, nil)
        defer { PQclear(result) }
        try check(result, handle: handle, sql: sql)
        prepared[sql] = name
        return name
    }

    /// Throws unless `result` is a success (`PGRES_COMMAND_OK`, `PGRES_TUPLES_OK`).
    private func check(_ result: OpaquePointer?, handle: OpaquePointer, sql: String) throws {
        let status = result.map { PQresultStatus($0) } ?? PGRES_FATAL_ERROR
        guard status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK || status == PGRES_EMPTY_QUERY else {
            throw PostgresError(result: result, connection: handle, sql: sql)
        }
    }
}

@available(*, unavailable)
extension Connection: Sendable {}

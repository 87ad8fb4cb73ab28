import Glibc
import Threads

/// A fixed set of read connections for WAL readers, borrowed one at a time.
///
/// In WAL mode readers never block the writer nor each other
/// (<https://www.sqlite.org/wal.html#concurrency>); each ``read(_:)`` runs in a deferred
/// transaction, so everything it reads comes from one snapshot of committed data.
///
/// ```swift
/// let readers = try DatabaseReaderPool(path: "buzzkit.sqlite", count: 4)
/// let user = try readers.read { db in try db.queryOne("SELECT * FROM users WHERE id = ?", [id]) }
/// ```
package final class DatabaseReaderPool: Sendable {
    private struct State: Sendable {
        /// Idle connections. Each is used by exactly one borrower at a time (the lock hands it
        /// out and takes it back), which is what makes the transfer box sound.
        var available: [UnsafeTransfer<Database>]
        var borrowed = 0
        var closed = false
    }

    private let shared: ConditionLock<State>

    /// Reader defaults: ``Database/Options`` with `readOnly = true`.
    package static var defaultOptions: Database.Options {
        var options = Database.Options()
        options.readOnly = true
        return options
    }

    /// Opens `count` connections.
    ///
    /// With `readOnly` set, connections open with `SQLITE_OPEN_READONLY` only if the file
    /// exists; otherwise they open read-write (creating it) with `PRAGMA query_only = ON`, which
    /// still refuses writes.
    /// - Parameters:
    ///   - path: The database file (the one the ``DatabaseWriter`` writes).
    ///   - count: Number of connections, the most concurrent reads.
    ///   - options: Connection options; read-only by default.
    package init(path: String, count: Int, options: Database.Options = DatabaseReaderPool.defaultOptions) throws {
        precondition(count > 0, "a reader pool needs at least one connection")
        var options = options
        var queryOnly = false
        if options.readOnly && access(path, F_OK) != 0 {
            options.readOnly = false
            queryOnly = true
        }
        var connections: [UnsafeTransfer<Database>] = []
        for _ in 0..<count {
            let database = try Database(path: path, options: options)
            if queryOnly { try database.execute("PRAGMA query_only = ON") }
            connections.append(UnsafeTransfer(value: database))
        }
        shared = ConditionLock(State(available: connections))
    }

    deinit {
        close()
    }

    /// Borrows a connection (waiting while all are busy) and runs `body` in a deferred read
    /// transaction on it, on the calling thread.
    ///
    /// Do not call `read` from inside `body`: with every connection borrowed it would wait forever.
    /// - Parameter body: The reads; the connection must not escape it.
    /// - Returns: What `body` returned.
    package func read<T>(_ body: (Database) throws -> T) throws -> T {
        let borrowed = shared.withLock(waitingUntil: { !$0.available.isEmpty || $0.closed }) {
            state -> UnsafeTransfer<Database>? in
            guard !state.closed else { return nil }
            state.borrowed += 1
            return state.available.removeLast()
        }
        guard let borrowed else { throw SQLiteError.misuse("the reader pool is closed") }
        defer {
            shared.withLock { state in
                state.available.append(borrowed)
                state.borrowed -= 1
            }
            shared.broadcast()
        }
        let database = borrowed.value
        return try database.transaction(.deferred) { try body(database) }
    }

    /// Waits for borrowed connections to come back, then closes all. Idempotent; later reads throw.
    package func close() {
        shared.withLock { $0.closed = true }
        shared.broadcast()
        let connections = shared.withLock(waitingUntil: { $0.borrowed == 0 }) { state in
            defer { state.available = [] }
            return state.available
        }
        for connection in connections { connection.value.close() }
    }
}

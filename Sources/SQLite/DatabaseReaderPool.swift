import Glibc
import Threads

/// A fixed set of read connections for WAL readers, borrowed one at a time.
///
/// In WAL mode readers never block the writer nor each other
/// (<https://www.sqlite.org/wal.html#concurrency>); each ``read(_:)`` runs in a deferred
/// transaction, so everything it reads comes from one snapshot of committed data.
///
/// **Shared read transactions.** Given the writer's commit count, reads on an event loop's thread
/// (``LoopIteration``) share one read transaction until the loop's wake-up ends, for as long as
/// the count has not moved since it began. Beginning and ending a transaction cost more than the
/// rows of a GET (2.2 of 6.6 µs for SQLite alone): the shared-memory read lock, its `fcntl`s and
/// a futex when two loops meet on SQLite's mutex. The snapshot stays as fresh as one of its own:
/// the count moves after each `COMMIT` and before that group is acknowledged, so a read after an
/// acknowledgement finds it moved and begins anew. Writes from another process (offline
/// commands) may be unseen until the wake-up ends, as the caches above already allow.
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
        /// Borrowed connections, those held open between reads included.
        var borrowed = 0
        var closed = false
        /// Connections whose read transaction an event loop keeps until its wake-up ends, one
        /// per loop thread at most; not in use while listed here.
        var held: [HeldTransaction] = []
    }

    /// An open read transaction kept by `thread`, begun when the commit count was `commitCount`.
    private struct HeldTransaction: Sendable {
        var thread: pthread_t
        var connection: UnsafeTransfer<Database>
        var commitCount: UInt64
    }

    private let shared: ConditionLock<State>
    /// The writer's commit count (``DatabaseWriter/groupsEnded``); nil: no shared transactions.
    private let commitCount: (@Sendable () -> UInt64)?

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
    ///   - commitCount: The writer's commit count, when every write to the file goes through that
    ///     writer: then reads on an event loop share read transactions (see the type's note).
    package init(
        path: String, count: Int, options: Database.Options = DatabaseReaderPool.defaultOptions,
        commitCount: (@Sendable () -> UInt64)? = nil
    ) throws {
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
        self.commitCount = commitCount
    }

    deinit {
        close()
    }

    /// Borrows a connection (waiting while all are busy) and runs `body` in a deferred read
    /// transaction on it, on the calling thread. On an event loop's thread, with a commit count
    /// given, the transaction may be the one this loop's earlier reads of the same wake-up used
    /// (see the type's note).
    ///
    /// Do not call `read` from inside `body`: with every connection borrowed it would wait forever.
    /// - Parameter body: The reads; the connection must not escape it.
    /// - Returns: What `body` returned.
    package func read<T>(_ body: (Database) throws -> T) throws -> T {
        if let commitCount, LoopIteration.isRunning {
            return try readSharingTransaction(commitCount: commitCount(), body)
        }
        let borrowed = shared.withLock(waitingUntil: { !$0.available.isEmpty || $0.closed }) {
            state -> UnsafeTransfer<Database>? in
            guard !state.closed else { return nil }
            state.borrowed += 1
            return state.available.removeLast()
        }
        guard let borrowed else { throw SQLiteError.misuse("the reader pool is closed") }
        defer { giveBack(borrowed) }
        let database = borrowed.value
        return try database.transaction(.deferred) { try body(database) }
    }

    /// ``read(_:)`` on an event loop's thread: in the transaction this thread kept open, when no
    /// group committed since it began (`now` is the count, loaded before anything is read).
    private func readSharingTransaction<T>(commitCount now: UInt64, _ body: (Database) throws -> T) throws -> T {
        let thread = pthread_self()
        let taken = shared.withLock(waitingUntil: { state in
            !state.available.isEmpty || state.closed || state.held.contains { pthread_equal($0.thread, thread) != 0 }
        }) { state -> (connection: UnsafeTransfer<Database>, heldSince: UInt64?, closed: Bool)? in
            if let index = state.held.firstIndex(where: { pthread_equal($0.thread, thread) != 0 }) {
                let held = state.held.remove(at: index)
                return (held.connection, held.commitCount, state.closed)
            }
            guard !state.closed else { return nil }
            state.borrowed += 1
            return (state.available.removeLast(), nil, false)
        }
        guard let taken else { throw SQLiteError.misuse("the reader pool is closed") }
        let database = taken.connection.value
        do {
            // Closed since this thread kept it: given back below, for `close` to take.
            guard !taken.closed else { throw SQLiteError.misuse("the reader pool is closed") }
            if taken.heldSince != now {
                if taken.heldSince != nil { try Self.endReadTransaction(database) }
                try database.execute(TransactionKind.deferred.beginSQL, [])
            }
            let result = try body(database)
            shared.withLock {
                $0.held.append(HeldTransaction(thread: thread, connection: taken.connection, commitCount: now))
            }
            if taken.heldSince == nil {
                LoopIteration.atEnd { [self] in endHeldTransaction(of: thread) }
            }
            return result
        } catch {
            database.rollbackIgnoringErrors()
            giveBack(taken.connection)
            throw error
        }
    }

    /// Ends the read transaction `thread` kept, if it still keeps one, and returns its connection.
    private func endHeldTransaction(of thread: pthread_t) {
        let held = shared.withLock { state -> HeldTransaction? in
            guard let index = state.held.firstIndex(where: { pthread_equal($0.thread, thread) != 0 }) else {
                return nil
            }
            return state.held.remove(at: index)
        }
        guard let held else { return }
        do {
            try Self.endReadTransaction(held.connection.value)
        } catch {
            held.connection.value.rollbackIgnoringErrors()
        }
        giveBack(held.connection)
    }

    /// `COMMIT` of a read transaction: it only releases the snapshot.
    private static func endReadTransaction(_ database: Database) throws {
        guard database.isInTransaction else { return }
        try database.execute("COMMIT TRANSACTION", [])
    }

    private func giveBack(_ connection: UnsafeTransfer<Database>) {
        shared.withLock { state in
            state.available.append(connection)
            state.borrowed -= 1
        }
        shared.broadcast()
    }

    /// Waits for borrowed connections to come back, then closes all. Idempotent; later reads throw.
    package func close() {
        // A transaction this thread keeps would otherwise come back only after this wait.
        endHeldTransaction(of: pthread_self())
        shared.withLock { $0.closed = true }
        shared.broadcast()
        let connections = shared.withLock(waitingUntil: { $0.borrowed == 0 }) { state in
            defer { state.available = [] }
            return state.available
        }
        for connection in connections { connection.value.close() }
    }
}

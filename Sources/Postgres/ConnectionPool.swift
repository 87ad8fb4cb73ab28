import Glibc
import Threads

/// At most `maxConnections` connections to one database, opened on demand and lent to one
/// borrower at a time. A connection that comes back broken (server restarted, network lost)
/// is closed instead of reused, so the next borrower gets a fresh one.
///
/// ```swift
/// let pool = ConnectionPool(url: url, maxConnections: 10)
/// let count = try pool.withConnection { try $0.queryOne("SELECT count(*) FROM t")!.int(0) }
/// ```
package final class ConnectionPool: Sendable {
    /// What the pool holds now, for `/metrics`.
    package struct Statistics: Sendable, Hashable {
        /// Connections open (idle or lent).
        package var open: Int
        /// Connections lent out.
        package var inUse: Int
        /// Borrowers waiting for one.
        package var waiting: Int
        /// The size limit.
        package var maxConnections: Int
        /// Borrows that had to wait, since start.
        package var waits: Int
        /// Connections closed because they came back broken, since start.
        package var discarded: Int
    }

    private struct State {
        var idle: [UnsafeTransfer<Connection>] = []
        var open = 0
        var inUse = 0
        var waiting = 0
        var waits = 0
        var discarded = 0
        var closed = false
    }

    /// The connection string.
    package let url: String
    /// The size limit.
    package let maxConnections: Int
    /// How long a borrower waits for a free connection before failing.
    package let acquireTimeout: Duration
    /// Runs on every new connection before its first use (e.g. `SET` statements).
    private let setUp: (@Sendable (Connection) throws -> Void)?
    private let shared = ConditionLock(State())

    /// Creates an empty pool; nothing connects until the first borrow.
    /// - Parameters:
    ///   - url: The libpq connection string.
    ///   - maxConnections: The most connections open at once (at least 1).
    ///   - acquireTimeout: How long ``withConnection(_:)`` waits when all are lent.
    ///   - setUp: Runs once on each new connection.
    package init(
        url: String, maxConnections: Int, acquireTimeout: Duration = .seconds(10),
        setUp: (@Sendable (Connection) throws -> Void)? = nil
    ) {
        precondition(maxConnections > 0, "a pool needs at least one connection")
        self.url = url
        self.maxConnections = maxConnections
        self.acquireTimeout = acquireTimeout
        self.setUp = setUp
    }

    deinit {
        close()
    }

    /// Borrows a connection (opening one when under the limit, else waiting) and runs `body`
    /// with it on the calling thread.
    ///
    /// Do not borrow again from inside `body`: with every connection lent it would wait for itself.
    /// - Throws: ``PostgresError`` when no connection frees up within ``acquireTimeout``
    ///   (`53300`), the pool is closed, connecting fails, or `body` throws.
    package func withConnection<T>(_ body: (Connection) throws -> T) throws -> T {
        let connection = try borrow()
        defer { giveBack(connection) }
        return try body(connection)
    }

    /// What the pool holds now.
    package var statistics: Statistics {
        shared.withLock {
            Statistics(
                open: $0.open, inUse: $0.inUse, waiting: $0.waiting, maxConnections: maxConnections, waits: $0.waits,
                discarded: $0.discarded)
        }
    }

    /// Closes idle connections and refuses new borrows; lent ones close when they come back.
    package func close() {
        let idle = shared.withLock { state -> [UnsafeTransfer<Connection>] in
            state.closed = true
            defer { state.idle.removeAll() }
            state.open -= state.idle.count
            return state.idle
        }
        for connection in idle { connection.value.close() }
        shared.broadcast()
    }

    /// Closes every idle connection (after a server restart all of them are dead); the next
    /// borrows open fresh ones.
    package func discardIdle() {
        let idle = shared.withLock { state -> [UnsafeTransfer<Connection>] in
            defer { state.idle.removeAll() }
            state.open -= state.idle.count
            state.discarded += state.idle.count
            return state.idle
        }
        for connection in idle { connection.value.close() }
        shared.broadcast()
    }

    private enum Grant {
        case idle(UnsafeTransfer<Connection>)
        case openNew
        case timedOut
        case closed
    }

    private func borrow() throws -> Connection {
        let grant = shared.withLock { state -> Grant? in
            if state.closed { return .closed }
            if let connection = state.idle.popLast() {
                state.inUse += 1
                return .idle(connection)
            }
            if state.open < maxConnections {
                state.open += 1
                state.inUse += 1
                return .openNew
            }
            state.waiting += 1
            state.waits += 1
            return nil
        }
        let decided: Grant
        if let grant {
            decided = grant
        } else {
            decided = shared.withLock(
                waitingUntil: { !$0.idle.isEmpty || $0.open < self.maxConnections || $0.closed },
                timeout: acquireTimeout
            ) { state -> Grant in
                state.waiting -= 1
                if state.closed { return .closed }
                if let connection = state.idle.popLast() {
                    state.inUse += 1
                    return .idle(connection)
                }
                if state.open < maxConnections {
                    state.open += 1
                    state.inUse += 1
                    return .openNew
                }
                return .timedOut
            }
        }
        switch decided {
        case .idle(let connection):
            return connection.value
        case .openNew:
            do {
                let connection = try Connection(url: url)
                try setUp?(connection)
                return connection
            } catch {
                shared.withLock {
                    $0.open -= 1
                    $0.inUse -= 1
                }
                shared.broadcast()
                throw error
            }
        case .timedOut:
            throw PostgresError(
                sqlState: "53300",
                message: "no database connection free within \(acquireTimeout) (pool of \(maxConnections))")
        case .closed:
            throw PostgresError.misuse("the connection pool is closed")
        }
    }

    private func giveBack(_ connection: Connection) {
        // A borrower that threw mid-transaction leaves it to us; a broken connection is dropped.
        if connection.isHealthy && connection.isInTransaction { connection.rollbackIgnoringErrors() }
        let keep = connection.isHealthy && !connection.isInTransaction
        let transfer = UnsafeTransfer(value: connection)
        let closeIt = shared.withLock { state -> Bool in
            state.inUse -= 1
            if keep && !state.closed {
                state.idle.append(transfer)
                return false
            }
            state.open -= 1
            if !keep { state.discarded += 1 }
            return true
        }
        if closeIt { connection.close() }
        shared.broadcast()
    }
}

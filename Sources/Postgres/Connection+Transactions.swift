import CPostgreSQL
import Glibc

/// The isolation level of a transaction (<https://www.postgresql.org/docs/15/transaction-iso.html>).
package enum IsolationLevel: Sendable, Hashable {
    /// Each statement sees what was committed before it began; the server default.
    case readCommitted
    /// One snapshot for the whole transaction; a write that races another fails with `40001`.
    case repeatableRead
    /// As if transactions ran one at a time; conflicts fail with `40001`.
    case serializable

    var sql: String {
        switch self {
        case .readCommitted: "READ COMMITTED"
        case .repeatableRead: "REPEATABLE READ"
        case .serializable: "SERIALIZABLE"
        }
    }
}

extension Connection {
    /// Runs `body` in a transaction: commits when it returns, rolls back when it throws and
    /// rethrows the body's error (never the rollback's).
    ///
    /// A `COMMIT` of a transaction that an unhandled statement error aborted is answered by
    /// the server with `ROLLBACK` and no error; that case throws here (`25P02`), so a body that
    /// swallowed an error cannot be mistaken for a commit.
    /// ```swift
    /// let id = try connection.transaction {
    ///     try connection.queryOne("INSERT INTO users(email) VALUES ($1) RETURNING id", [email])!.int(0)
    /// }
    /// ```
    /// - Parameters:
    ///   - isolation: The isolation level; read committed by default.
    ///   - readOnly: `BEGIN … READ ONLY`: writes fail with `25006`.
    ///   - body: The work; it must not begin another transaction (use ``savepoint(_:_:)``).
    /// - Returns: What `body` returned.
    package func transaction<T>(
        _ isolation: IsolationLevel = .readCommitted, readOnly: Bool = false, _ body: () throws -> T
    ) throws -> T {
        try execute("BEGIN ISOLATION LEVEL \(isolation.sql)\(readOnly ? " READ ONLY" : "")")
        let result: T
        do {
            result = try body()
        } catch {
            rollbackIgnoringErrors()
            throw error
        }
        let handle = try openHandle(sql: "COMMIT")
        if PQtransactionStatus(handle) == PQTRANS_INERROR {
            rollbackIgnoringErrors()
            throw PostgresError(
                sqlState: "25P02", message: "the transaction was aborted by an earlier error and rolled back",
                sql: "COMMIT")
        }
        do {
            try execute("COMMIT")
        } catch {
            // A failed COMMIT (serialization failure at commit, lost connection) ends the
            // transaction on the server; roll back in case it did not.
            rollbackIgnoringErrors()
            throw error
        }
        return result
    }

    /// Rolls back if a transaction is open; errors are ignored (the connection may be gone,
    /// and the error worth reporting is the one that led here).
    func rollbackIgnoringErrors() {
        guard isInTransaction else { return }
        try? execute("ROLLBACK")
    }

    /// Runs `body` inside `SAVEPOINT name`: released when it returns; when it throws, rolled
    /// back to the savepoint and released, so only `body`'s changes are undone (and an aborted
    /// transaction is usable again), then rethrown.
    ///
    /// ```swift
    /// try connection.transaction {
    ///     try connection.execute("INSERT …", [a])
    ///     try? connection.savepoint { try connection.execute("INSERT …", [b]) }   // may fail alone
    /// }
    /// ```
    /// - Parameters:
    ///   - name: The savepoint name: letters, digits and `_` only (it is not quoted).
    ///   - body: The work; must run inside ``transaction(_:readOnly:_:)``.
    /// - Returns: What `body` returned.
    package func savepoint<T>(_ name: String = "sp", _ body: () throws -> T) throws -> T {
        precondition(
            !name.isEmpty
                && name.unicodeScalars.allSatisfy {
                    $0.isASCII && ($0 == "_" || $0.properties.isAlphabetic || ("0"..."9").contains($0))
                },
            "a savepoint name is letters, digits and _")
        try execute("SAVEPOINT \(name)")
        let result: T
        do {
            result = try body()
        } catch {
            // Both fail if the whole transaction is gone (lost connection); the body's error is
            // the one worth reporting.
            try? execute("ROLLBACK TO SAVEPOINT \(name)")
            try? execute("RELEASE SAVEPOINT \(name)")
            throw error
        }
        try execute("RELEASE SAVEPOINT \(name)")
        return result
    }

    /// Runs `body` in a transaction, again from the start when it fails with a serialization
    /// failure (`40001`) or a deadlock (`40P01`), at most `attempts` times in all, sleeping a
    /// random 1–`2^n` ms between tries so two losers do not collide again in step.
    /// - Parameters:
    ///   - isolation: The isolation level of each try.
    ///   - attempts: Tries in all, at least 1.
    ///   - onRetry: Called before each retry with the error that caused it (metrics).
    ///   - body: The work; it runs once per try, so it must have no effects outside the database.
    package func retryingTransaction<T>(
        _ isolation: IsolationLevel = .readCommitted, attempts: Int = 5,
        onRetry: (PostgresError) -> Void = { _ in }, _ body: () throws -> T
    ) throws -> T {
        var attempt = 1
        while true {
            do {
                return try transaction(isolation, body)
            } catch let error as PostgresError where error.isRetryable && attempt < attempts {
                onRetry(error)
                backOff(attempt: attempt)
                attempt += 1
            }
        }
    }
}

/// Sleeps a random 1…2^attempt milliseconds (capped at 64 ms): full jitter.
package func backOff(attempt: Int) {
    let ceiling = 1 << min(max(attempt, 1), 6)
    usleep(UInt32(Int.random(in: 1...ceiling) * 1000))
}

/// How `BEGIN` takes its locks (<https://www.sqlite.org/lang_transaction.html>).
package enum TransactionKind: Sendable, Hashable {
    /// No lock until the first read or write. Use for read transactions.
    case deferred
    /// Takes the write lock at `BEGIN`, so a later write cannot fail with `SQLITE_BUSY`
    /// half-way; the default for writes.
    case immediate
    /// Like immediate; in WAL mode identical to it.
    case exclusive

    var beginSQL: String {
        switch self {
        case .deferred: "BEGIN DEFERRED TRANSACTION"
        case .immediate: "BEGIN IMMEDIATE TRANSACTION"
        case .exclusive: "BEGIN EXCLUSIVE TRANSACTION"
        }
    }
}

extension Database {
    /// Runs `body` in a transaction: commits when it returns, rolls back when it throws and
    /// rethrows the body's error (never the rollback's).
    ///
    /// ```swift
    /// let id = try db.transaction {
    ///     try db.execute("INSERT INTO users(email) VALUES (?)", [email])
    ///     return db.lastInsertRowID
    /// }
    /// ```
    /// - Parameters:
    ///   - kind: `BEGIN` flavour; `.immediate` by default, so writes never hit `SQLITE_BUSY` mid-way.
    ///   - body: The work; it must not begin another transaction (use ``savepoint(_:_:)``).
    /// - Returns: What `body` returned.
    package func transaction<T>(_ kind: TransactionKind = .immediate, _ body: () throws -> T) throws -> T {
        try execute(kind.beginSQL, [])
        let result: T
        do {
            result = try body()
        } catch {
            rollbackIgnoringErrors()
            throw error
        }
        do {
            try execute("COMMIT TRANSACTION", [])
        } catch {
            // A failed COMMIT (e.g. SQLITE_BUSY, SQLITE_FULL) may leave the transaction open.
            rollbackIgnoringErrors()
            throw error
        }
        return result
    }

    /// Rolls back if a transaction is still open; SQLite may already have rolled it back
    /// itself after errors such as `SQLITE_FULL` (<https://www.sqlite.org/lang_transaction.html>,
    /// "Response To Errors Within A Transaction").
    func rollbackIgnoringErrors() {
        guard isInTransaction else { return }
        try? execute("ROLLBACK TRANSACTION", [])
    }

    /// Runs `body` inside `SAVEPOINT name`: released when it returns; when it throws, rolled
    /// back to the savepoint and released, so only `body`'s changes are undone, then rethrown.
    ///
    /// Outside a transaction a savepoint behaves as `BEGIN DEFERRED … COMMIT`.
    /// ```swift
    /// try db.transaction {
    ///     try db.execute("INSERT …", [a])
    ///     try? db.savepoint { try db.execute("INSERT …", [b]) }   // may fail alone
    /// }
    /// ```
    /// - Parameters:
    ///   - name: The savepoint name (quoted as an identifier).
    ///   - body: The work.
    /// - Returns: What `body` returned.
    package func savepoint<T>(_ name: String = "sp", _ body: () throws -> T) throws -> T {
        try savepoint(Savepoint(name), body)
    }

    /// The savepoint above with its statements made beforehand: the writer runs one
    /// for every job, and making the three statements' text each time (quoting the name,
    /// interpolating, then looking up a new String in the statement cache) cost ~2k instructions
    /// a job (callgrind).
    package func savepoint<T>(_ savepoint: Savepoint, _ body: () throws -> T) throws -> T {
        try execute(savepoint.begin, [])
        let result: T
        do {
            result = try body()
        } catch {
            // Both can fail if SQLite already rolled back the whole transaction; the body's
            // error is the one worth reporting.
            try? execute(savepoint.rollback, [])
            try? execute(savepoint.release, [])
            throw error
        }
        do {
            try execute(savepoint.release, [])
        } catch {
            // Releasing the outermost savepoint commits, and that can fail.
            try? execute(savepoint.rollback, [])
            try? execute(savepoint.release, [])
            throw error
        }
        return result
    }
}

/// The statements of one named savepoint, its name quoted as an identifier.
package struct Savepoint: Sendable {
    let begin: String
    let release: String
    let rollback: String

    package init(_ name: String) {
        let identifier = "\"" + name.replacingAll("\"", with: "\"\"") + "\""
        begin = "SAVEPOINT \(identifier)"
        release = "RELEASE SAVEPOINT \(identifier)"
        rollback = "ROLLBACK TO SAVEPOINT \(identifier)"
    }
}

extension String {
    /// Replaces every occurrence of `target` (no Foundation needed).
    func replacingAll(_ target: Character, with replacement: String) -> String {
        var result = ""
        for character in self {
            if character == target { result += replacement } else { result.append(character) }
        }
        return result
    }
}

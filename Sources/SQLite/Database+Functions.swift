import CSQLite

extension Database {
    /// Registers `name(integer)`, an SQL function that hands its argument to `body` and returns
    /// NULL. Triggers use it to tell Swift which rows a statement touched, inside SQLite, for every
    /// write on this connection (<https://www.sqlite.org/c3ref/create_function.html>).
    ///
    /// `body` runs on whichever thread runs the statement; the connection is used by one thread
    /// at a time, so so is `body`. Deterministic flags are not set: it must run for every row.
    package func createIntegerObserver(_ name: String, _ body: @escaping (Int64) -> Void) throws {
        let handle = try openHandle(sql: name)
        let box = Unmanaged.passRetained(ObserverBox(body)).toOpaque()
        let result = sqlite3_create_function_v2(
            handle, name, 1, SQLITE_UTF8, box,
            { context, count, arguments in
                guard let context, count == 1, let argument = arguments?[0] else { return }
                // Borrowed, not taken: SQLite holds the box for as long as the function exists,
                // and taking it was a retain and a release on every row a trigger reports.
                Unmanaged<ObserverBox>.fromOpaque(sqlite3_user_data(context))._withUnsafeGuaranteedRef {
                    $0.body(sqlite3_value_int64(argument))
                }
                sqlite3_result_null(context)
            },
            nil, nil,
            { box in box.map { Unmanaged<ObserverBox>.fromOpaque($0).release() } })
        guard result == SQLITE_OK else { throw SQLiteError(connection: handle, resultCode: result, sql: name) }
    }
}

/// Keeps an observer closure alive for as long as SQLite holds the function.
private final class ObserverBox {
    let body: (Int64) -> Void
    init(_ body: @escaping (Int64) -> Void) { self.body = body }
}

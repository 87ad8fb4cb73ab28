import SQLite

// `Database.query(_:_:read:)` and `queryOne(_:_:read:)` again, compiled in this module: the
// SQLite module's copies run unspecialised here (their `T` is only known at run time, even
// marked `@inlinable`), and each call looked up the metadata of `T?` and `[T]` in the runtime's
// tables: ~7k instructions of an uncached GET's seven statements (callgrind). Within this module
// the optimiser specialises every caller's copy, so this module maps rows with these.
extension Database {
    /// Every row of a cached query, mapped in place by `read` (rows it maps to nil are skipped).
    func rows<T>(_ sql: String, _ arguments: [any SQLiteBindable] = [], read: (Statement) throws -> T?) throws -> [T] {
        let statement = try cachedStatement(sql)
        defer { statement.reset() }
        try statement.bind(arguments)
        var values: [T] = []
        while try statement.step() {
            guard let value = try read(statement) else { continue }
            // Room for a few at the first row: most lists here are short, and growing from one
            // element reallocated twice (~1k instructions for a subscriber's three attributes).
            if values.isEmpty { values.reserveCapacity(4) }
            values.append(value)
        }
        return values
    }

    /// The first row of a cached query, mapped in place by `read`; nil when there is none.
    func firstRow<T>(_ sql: String, _ arguments: [any SQLiteBindable] = [], read: (Statement) throws -> T) throws -> T?
    {
        let statement = try cachedStatement(sql)
        defer { statement.reset() }
        try statement.bind(arguments)
        return try statement.step() ? read(statement) : nil
    }
}

import SQLite

// Rows mapped in place, straight from the statement into records, defined in this module on
// purpose: a generic of the SQLite module runs unspecialised when called from here (its `T` only
// known at run time, even marked `@inlinable`), and each call looked up the metadata of `T?` and
// `[T]` in the runtime's tables: ~7k instructions of an uncached GET's seven statements
// (callgrind). Within this module the optimiser specialises every caller's copy. The SQLite
// module keeps only its `Row`-returning `query` and `queryOne`.
extension Database {
    /// Every row of a cached query, mapped in place by `read` (rows it maps to nil are skipped).
    func rows<T>(_ sql: String, _ arguments: [any SQLiteBindable] = [], read: (Statement) throws -> T?) throws -> [T] {
        try rows(sql, binding: { try $0.bind(arguments) }, read: read)
    }

    /// `rows` for a statement of one or two parameters, bound without an argument array.
    func rows<T>(_ sql: String, _ first: SQLiteValue, _ second: SQLiteValue? = nil, read: (Statement) throws -> T?)
        throws -> [T]
    {
        try rows(sql, binding: { try $0.bind(first, second) }, read: read)
    }

    private func rows<T>(_ sql: String, binding: (Statement) throws -> Void, read: (Statement) throws -> T?) throws
        -> [T]
    {
        let statement = try cachedStatement(sql)
        defer { statement.reset() }
        try binding(statement)
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
        try firstRow(sql, binding: { try $0.bind(arguments) }, read: read)
    }

    /// `firstRow` for a statement of one or two parameters, bound without an argument array.
    func firstRow<T>(_ sql: String, _ first: SQLiteValue, _ second: SQLiteValue? = nil, read: (Statement) throws -> T)
        throws -> T?
    {
        try firstRow(sql, binding: { try $0.bind(first, second) }, read: read)
    }

    private func firstRow<T>(_ sql: String, binding: (Statement) throws -> Void, read: (Statement) throws -> T)
        throws -> T?
    {
        let statement = try cachedStatement(sql)
        defer { statement.reset() }
        try binding(statement)
        return try statement.step() ? read(statement) : nil
    }
}

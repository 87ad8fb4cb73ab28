/// A column that did not hold what the schema says it holds: NULL where a value is required, or
/// a value of another type. Thrown instead of a default, so a damaged row reaches the log and
/// the caller sees an error, never a silent `0`, `""` or `false`.
///
/// Like ``SQLiteError``, it names the column and the SQL, never the value (it may be an email).
package struct RowDecodingError: Error, Sendable, CustomStringConvertible {
    /// The column's name in the result.
    package var column: String
    /// What the reader asked for ("INTEGER", "TEXT or NULL", "0 or 1").
    package var expected: String
    /// The storage class found.
    package var found: String
    /// The statement, with placeholders, when the row came straight from one.
    package var sql: String?

    package init(column: String, expected: String, found: String, sql: String?) {
        self.column = column
        self.expected = expected
        self.found = found
        self.sql = sql
    }

    package var description: String {
        var text = "column \(column): expected \(expected), found \(found)"
        if let sql { text += " — in `\(sql)`" }
        return text
    }
}

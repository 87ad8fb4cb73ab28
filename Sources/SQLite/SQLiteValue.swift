// MARK: - Values

/// One SQLite value, in the five storage classes of <https://www.sqlite.org/datatype3.html>.
package enum SQLiteValue: Sendable, Hashable {
    /// SQL `NULL`.
    case null
    /// A 64-bit signed integer (`INTEGER`).
    case integer(Int64)
    /// An IEEE 754 double (`REAL`).
    case real(Double)
    /// UTF-8 text (`TEXT`).
    case text(String)
    /// Raw bytes (`BLOB`); an empty array is an empty blob, not `NULL`.
    case blob([UInt8])
}

extension SQLiteValue {
    /// The storage class's name, for errors.
    package var typeName: String {
        switch self {
        case .null: "NULL"
        case .integer: "INTEGER"
        case .real: "REAL"
        case .text: "TEXT"
        case .blob: "BLOB"
        }
    }

    /// The name of a `sqlite3_column_type` result.
    static func typeName(_ type: Int32) -> String {
        switch type {
        case 1: "INTEGER"
        case 2: "REAL"
        case 3: "TEXT"
        case 4: "BLOB"
        default: "NULL"
        }
    }
}

// MARK: - Bindable

/// A Swift value that can be bound to a `?` parameter of a statement.
///
/// Conforming types: `Int`, `Int64`, `Double`, `String`, `Bool` (as 0/1), `[UInt8]` (blob),
/// `Optional` of any of them (`nil` binds `NULL`), and ``SQLiteValue`` itself.
///
/// ```swift
/// try db.execute("INSERT INTO t(a, b) VALUES (?, ?)", [42, "x"])
/// ```
package protocol SQLiteBindable {
    /// The value bound to the statement parameter.
    var sqliteValue: SQLiteValue { get }
}

extension SQLiteValue: SQLiteBindable {
    /// The value itself.
    package var sqliteValue: SQLiteValue { self }
}

extension Int: SQLiteBindable {
    /// `.integer`.
    package var sqliteValue: SQLiteValue { .integer(Int64(self)) }
}

extension Int64: SQLiteBindable {
    /// `.integer`.
    package var sqliteValue: SQLiteValue { .integer(self) }
}

extension Double: SQLiteBindable {
    /// `.real`.
    package var sqliteValue: SQLiteValue { .real(self) }
}

extension String: SQLiteBindable {
    /// `.text`.
    package var sqliteValue: SQLiteValue { .text(self) }
}

extension Bool: SQLiteBindable {
    /// `.integer(1)` or `.integer(0)`: SQLite has no boolean type.
    package var sqliteValue: SQLiteValue { .integer(self ? 1 : 0) }
}

extension Array: SQLiteBindable where Element == UInt8 {
    /// `.blob`.
    package var sqliteValue: SQLiteValue { .blob(self) }
}

extension Optional: SQLiteBindable where Wrapped: SQLiteBindable {
    /// The wrapped value, or `.null` for `nil`.
    package var sqliteValue: SQLiteValue {
        switch self {
        case .none: .null
        case .some(let wrapped): wrapped.sqliteValue
        }
    }
}

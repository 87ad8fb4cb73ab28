import CPostgreSQL

/// The rows of one statement: owns its `PGresult` and clears it in `deinit`. Not `Sendable`.
///
/// ```swift
/// for row in try connection.query("SELECT id, email FROM users") {
///     let id = try row.int(0), email = try row.optionalString(1)
/// }
/// ```
package final class QueryResult: RandomAccessCollection {
    /// The `PGresult *`.
    let handle: OpaquePointer
    /// The SQL text, for decoding errors.
    package let sql: String

    init(_ handle: OpaquePointer, sql: String) {
        self.handle = handle
        self.sql = sql
    }

    deinit {
        PQclear(handle)
    }

    /// Rows affected by an `INSERT`, `UPDATE`, `DELETE` (`PQcmdTuples`); 0 for other statements.
    package var affectedRows: Int {
        guard let text = PQcmdTuples(handle) else { return 0 }
        return Int(String(cString: text)) ?? 0
    }

    /// The number of columns.
    package var columnCount: Int { Int(PQnfields(handle)) }

    /// The name of a 0-based column.
    package func columnName(_ column: Int) -> String {
        PQfname(handle, Int32(column)).map { String(cString: $0) } ?? "?"
    }

    /// The first index.
    package var startIndex: Int { 0 }
    /// One past the last row.
    package var endIndex: Int { Int(PQntuples(handle)) }
    /// The row at a 0-based index.
    package subscript(_ index: Int) -> PostgresRow { PostgresRow(result: self, index: Int32(index)) }
}

@available(*, unavailable)
extension QueryResult: Sendable {}

/// One row of a ``QueryResult``, read by 0-based column in text format.
///
/// Non-optional accessors throw on `NULL` and on a column whose type does not match (a
/// `bool` read as an integer), naming the column: a row that does not decode fails closed,
/// never with a default. `optional…` accessors return `nil` for `NULL` only.
package struct PostgresRow {
    /// The result the row belongs to (kept alive by this reference).
    let result: QueryResult
    /// The row number.
    let index: Int32

    /// True when the column is `NULL`.
    package func isNull(_ column: Int) -> Bool {
        PQgetisnull(result.handle, index, Int32(column)) == 1
    }

    // MARK: Required values

    /// A `smallint`, `integer`, `bigint` or `xid` column.
    package func int(_ column: Int) throws -> Int64 {
        guard let value = try optionalInt(column) else { throw nullError(column, "an integer") }
        return value
    }

    /// A `text`, `varchar` or `char` column (also `json`/`jsonb`, in their text form).
    package func string(_ column: Int) throws -> String {
        guard let value = try optionalString(column) else { throw nullError(column, "text") }
        return value
    }

    /// A `boolean` column.
    package func bool(_ column: Int) throws -> Bool {
        guard let value = try optionalBool(column) else { throw nullError(column, "a boolean") }
        return value
    }

    /// A `double precision`, `real`, `numeric` or integer column.
    package func double(_ column: Int) throws -> Double {
        guard let value = try optionalDouble(column) else { throw nullError(column, "a number") }
        return value
    }

    /// A `bytea` column.
    package func bytes(_ column: Int) throws -> [UInt8] {
        guard let value = try optionalBytes(column) else { throw nullError(column, "bytes") }
        return value
    }

    // MARK: Optional values

    /// An integer column; `nil` for `NULL`.
    package func optionalInt(_ column: Int) throws -> Int64? {
        try expect(column, Self.integerTypes, "an integer")
        guard let bytes = raw(column) else { return nil }
        guard let value = Self.parseInt(bytes) else { throw decodeError(column, "an integer") }
        return value
    }

    /// A text column; `nil` for `NULL`.
    package func optionalString(_ column: Int) throws -> String? {
        try expect(column, Self.textTypes, "text")
        return raw(column).map { String(decoding: $0, as: UTF8.self) }
    }

    /// A boolean column; `nil` for `NULL`.
    package func optionalBool(_ column: Int) throws -> Bool? {
        try expect(column, [Self.boolType], "a boolean")
        guard let bytes = raw(column) else { return nil }
        switch bytes.first {
        case UInt8(ascii: "t"): return true
        case UInt8(ascii: "f"): return false
        default: throw decodeError(column, "a boolean")
        }
    }

    /// A number column; `nil` for `NULL`.
    package func optionalDouble(_ column: Int) throws -> Double? {
        try expect(column, Self.numberTypes, "a number")
        guard let bytes = raw(column) else { return nil }
        guard let value = Double(String(decoding: bytes, as: UTF8.self)) else {
            throw decodeError(column, "a number")
        }
        return value
    }

    /// A `bytea` column (hex output, the server default since 9.0); `nil` for `NULL`.
    package func optionalBytes(_ column: Int) throws -> [UInt8]? {
        try expect(column, [Self.byteaType], "bytes")
        guard let bytes = raw(column) else { return nil }
        guard bytes.count >= 2, bytes[0] == UInt8(ascii: "\\"), bytes[1] == UInt8(ascii: "x"), bytes.count % 2 == 0
        else { throw decodeError(column, "bytes in hex format") }
        var out: [UInt8] = []
        out.reserveCapacity((bytes.count - 2) / 2)
        var i = 2
        while i < bytes.count {
            guard let high = Self.hexDigit(bytes[i]), let low = Self.hexDigit(bytes[i + 1]) else {
                throw decodeError(column, "bytes in hex format")
            }
            out.append(high << 4 | low)
            i += 2
        }
        return out
    }

    // MARK: Plumbing

    /// The column's text, or nil for `NULL`; valid while `result` lives.
    private func raw(_ column: Int) -> UnsafeBufferPointer<UInt8>? {
        let column = Int32(column)
        guard PQgetisnull(result.handle, index, column) == 0, let value = PQgetvalue(result.handle, index, column)
        else { return nil }
        let length = Int(PQgetlength(result.handle, index, column))
        return value.withMemoryRebound(to: UInt8.self, capacity: length) {
            UnsafeBufferPointer(start: $0, count: length)
        }
    }

    /// Throws unless the column exists and has one of `types` (type OIDs from `pg_type.dat`).
    private func expect(_ column: Int, _ types: Set<UInt32>, _ what: String) throws {
        guard column >= 0, column < result.columnCount else {
            throw PostgresError.decoding("no column \(column) (the result has \(result.columnCount))", sql: result.sql)
        }
        let type = PQftype(result.handle, Int32(column))
        guard types.contains(type) else {
            throw PostgresError.decoding(
                "column \(column) (\(result.columnName(column))) has type oid \(type), not \(what)", sql: result.sql)
        }
    }

    private func nullError(_ column: Int, _ what: String) -> PostgresError {
        PostgresError.decoding(
            "column \(column) (\(result.columnName(column))) is NULL, expected \(what)", sql: result.sql)
    }

    private func decodeError(_ column: Int, _ what: String) -> PostgresError {
        PostgresError.decoding(
            "column \(column) (\(result.columnName(column))) does not read as \(what)", sql: result.sql)
    }

    // Type OIDs (stable since PostgreSQL 7: src/include/catalog/pg_type.dat).
    private static let boolType: UInt32 = 16
    private static let byteaType: UInt32 = 17
    // int8, int2, int4, and xid: a transaction id (`xmin`), unsigned 32-bit, decimal as text.
    private static let integerTypes: Set<UInt32> = [20, 21, 23, 28]
    // text, varchar, bpchar, name, json, jsonb, unknown
    private static let textTypes: Set<UInt32> = [25, 1043, 1042, 19, 114, 3802, 705]
    private static let numberTypes: Set<UInt32> = [700, 701, 1700, 20, 21, 23]  // float4, float8, numeric, ints

    /// Parses an optionally signed decimal integer without building a String.
    private static func parseInt(_ bytes: UnsafeBufferPointer<UInt8>) -> Int64? {
        var i = 0
        var negative = false
        if bytes.first == UInt8(ascii: "-") {
            negative = true
            i = 1
        }
        guard i < bytes.count else { return nil }
        var value: Int64 = 0
        while i < bytes.count {
            let digit = bytes[i] &- UInt8(ascii: "0")
            guard digit < 10 else { return nil }
            let (times, overflow1) = value.multipliedReportingOverflow(by: 10)
            let (next, overflow2) =
                negative
                ? times.subtractingReportingOverflow(Int64(digit)) : times.addingReportingOverflow(Int64(digit))
            guard !overflow1, !overflow2 else { return nil }
            value = next
            i += 1
        }
        return value
    }

    private static func hexDigit(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}

@available(*, unavailable)
extension PostgresRow: Sendable {}

import CSQLite
import StringBytes

/// A prepared statement: owns its `sqlite3_stmt` and finalizes it in `deinit`.
///
/// Obtain one from ``Database/prepare(_:)`` (uncached) or ``Database/cachedStatement(_:)``.
/// Like its connection, it is used by one thread at a time and never crosses threads.
///
/// ```swift
/// let insert = try db.prepare("INSERT INTO t(a) VALUES (?)")
/// for value in values { try insert.run([value]) }
/// ```
package final class Statement {
    /// The `sqlite3_stmt *`; valid until `deinit`.
    let handle: OpaquePointer
    /// The connection, for error messages (`sqlite3_db_handle`).
    private var connection: OpaquePointer? { sqlite3_db_handle(handle) }
    /// The SQL text as written, with placeholders: safe to show in errors.
    package let sql: String
    /// Column names, computed once: every row of this statement shares the array.
    package private(set) lazy var columnNames: [String] = (0..<sqlite3_column_count(handle)).map {
        String(cString: sqlite3_column_name(handle, $0))
    }

    /// Set by ``prepareForReuse()``: the parameters still hold the last use's values. The first
    /// ``bind(_:at:)`` or ``step()`` that finds it set clears them to NULL, so a parameter this
    /// use leaves unbound is NULL, as on a new statement; binding every parameter at once
    /// (``bind(_:)``) needs no clearing.
    private var holdsLastUsesBindings = false

    /// Whether ``step()`` ran since the last ``reset()``: such a statement (even one that ran to
    /// its end) takes no binding until it is reset.
    private var steppedSinceReset = false

    /// Takes ownership of a prepared statement.
    init(handle: OpaquePointer, sql: String) {
        self.handle = handle
        self.sql = sql
    }

    deinit {
        sqlite3_finalize(handle)
    }

    // MARK: - Binding

    /// Binds `arguments` to the `?` parameters, in order, replacing what was bound before.
    /// - Parameter arguments: One value per parameter; the count must match exactly.
    package func bind(_ arguments: [any SQLiteBindable]) throws {
        // No sqlite3_clear_bindings first: every parameter is bound below (or we throw, and this
        // use does not run it; `prepareForReuse` marks what is left for clearing).
        try checkParameterCount(arguments.count)
        holdsLastUsesBindings = false
        for (offset, argument) in arguments.enumerated() {
            try bindValue(argument.sqliteValue, at: Int32(offset + 1))
        }
    }

    /// Binds a statement of one or two parameters without an argument array: the reads every
    /// request runs bind a key or two, and each `[any SQLiteBindable]` cost an allocation and
    /// boxed values (~300 instructions a statement, callgrind).
    package func bind(_ first: SQLiteValue, _ second: SQLiteValue? = nil) throws {
        try checkParameterCount(second == nil ? 1 : 2)
        holdsLastUsesBindings = false
        try bindValue(first, at: 1)
        if let second { try bindValue(second, at: 2) }
    }

    /// `SQLITE_RANGE` unless the statement has exactly `given` parameters.
    private func checkParameterCount(_ given: Int) throws {
        let expected = Int(sqlite3_bind_parameter_count(handle))
        guard given == expected else {
            throw SQLiteError(
                extendedCode: SQLITE_RANGE, message: "statement expects \(expected) arguments, got \(given)", sql: sql)
        }
    }

    /// Binds one value at a 1-based parameter index, leaving the other bindings as they are: a
    /// statement rerun in a loop binds what changes, with no argument array per run.
    package func bind(_ value: SQLiteValue, at index: Int32) throws {
        clearLastUsesBindings()
        try bindValue(value, at: index)
    }

    /// `bind(_:at:)` for a text, NULL for nil, read from the string in place: a `.text` value
    /// copied the string first (a retain and a release), as an `[any SQLiteBindable]` element did.
    package func bind(text: String?, at index: Int32) throws {
        clearLastUsesBindings()
        guard let text else { return try check(sqlite3_bind_null(handle, index)) }
        try bindText(text, at: index)
    }

    /// Binds the statement's `count` parameters by index in `bindAll` (`bind(_:at:)`,
    /// `bind(text:at:)`), steps it to completion ignoring rows, then resets it: the write path's
    /// statements, where an `[any SQLiteBindable]` was an array and a boxed value per parameter.
    /// `SQLITE_RANGE` if the count is not the statement's; a parameter `bindAll` leaves unbound
    /// is NULL, as with `bind(_:at:)`, never the last use's value.
    package func runBinding(_ count: Int, _ bindAll: (Statement) throws -> Void) throws {
        defer { reset() }
        try checkParameterCount(count)
        try bindAll(self)
        while try step() {}
    }

    private func check(_ result: Int32) throws {
        guard result == SQLITE_OK else {
            throw SQLiteError(connection: connection, resultCode: result, sql: sql)
        }
    }

    private func clearLastUsesBindings() {
        guard holdsLastUsesBindings else { return }
        sqlite3_clear_bindings(handle)
        holdsLastUsesBindings = false
    }

    private func bindValue(_ value: SQLiteValue, at index: Int32) throws {
        switch value {
        case .null:
            try check(sqlite3_bind_null(handle, index))
        case .integer(let value):
            try check(sqlite3_bind_int64(handle, index, value))
        case .real(let value):
            try check(sqlite3_bind_double(handle, index, value))
        case .text(let text):
            try bindText(text, at: index)
        case .blob(let bytes):
            try check(
                bytes.withUnsafeBytes { buffer in
                    guard let base = buffer.baseAddress, buffer.count > 0 else {
                        // Same trap as text: a NULL pointer binds NULL, not an empty blob.
                        return sqlite3_bind_zeroblob(handle, index, 0)
                    }
                    return buzzkit_sqlite3_bind_blob_transient(
                        handle, index, base, try Self.checkedLength(buffer.count, sql: sql))
                })
        }
    }

    /// Binds `text`'s UTF-8 (copied by SQLite), read in place: `String.withUTF8` is mutating,
    /// and its copy of the string was a retain and a release for every text bound.
    private func bindText(_ text: String, at index: Int32) throws {
        try check(
            withUTF8Bytes(text) { bytes in
                guard let base = bytes.baseAddress, bytes.count > 0 else {
                    // A NULL pointer would bind NULL: bind a real empty string instead.
                    return buzzkit_sqlite3_bind_text_transient(handle, index, "", 0)
                }
                let length = try Self.checkedLength(bytes.count, sql: sql)
                return base.withMemoryRebound(to: CChar.self, capacity: bytes.count) {
                    buzzkit_sqlite3_bind_text_transient(handle, index, $0, length)
                }
            })
    }

    private static func checkedLength(_ count: Int, sql: String) throws -> Int32 {
        guard let length = Int32(exactly: count) else {
            throw SQLiteError(extendedCode: SQLITE_TOOBIG, message: "bound value is too large", sql: sql)
        }
        return length
    }

    // MARK: - Stepping

    /// Resets the statement so it can run again; bindings are kept (``bind(_:)`` clears them).
    ///
    /// The result code of `sqlite3_reset` repeats the last `step` error, which was already
    /// thrown, so it is ignored here.
    package func reset() {
        sqlite3_reset(handle)
        steppedSinceReset = false
    }

    /// Readies the statement for its next use, as if new: no parameter bound, not started.
    /// Every helper resets a statement when done with it, so the reset here is only for a use
    /// that stepped it to its end and stopped, and the bindings are cleared only if the next use
    /// does not bind them all. A reset and a clear on every reuse were ~450 instructions a
    /// statement, a dozen statements an identify (callgrind).
    func prepareForReuse() {
        if steppedSinceReset { reset() }
        holdsLastUsesBindings = true
    }

    /// Advances to the next row.
    /// - Returns: `true` when a row is available (read it with ``row()``), `false` when done.
    package func step() throws -> Bool {
        clearLastUsesBindings()
        steppedSinceReset = true
        let result = sqlite3_step(handle)
        switch result {
        case SQLITE_ROW: return true
        case SQLITE_DONE: return false
        default: throw SQLiteError(connection: connection, resultCode: result, sql: sql)
        }
    }

    /// Copies the current row's values; call only after ``step()`` returned `true`.
    package func row() -> Row {
        let count = sqlite3_column_count(handle)
        var values: [SQLiteValue] = []
        values.reserveCapacity(Int(count))
        for column in 0..<count {
            values.append(value(at: column))
        }
        return Row(columnNames: columnNames, values: values)
    }

    // MARK: Reading the current row in place

    // For hot paths that map a row straight into a record (Storage's `Database.rows` and
    // `firstRow`): no `[SQLiteValue]`, no `Row`, no column-name lookup. Same conversions as ``Row``'s
    // accessors for the types the schema stores.

    /// The integer in 0-based `column`; `nil` for `NULL`.
    package func int(at column: Int32) -> Int64? {
        sqlite3_column_type(handle, column) == SQLITE_NULL ? nil : sqlite3_column_int64(handle, column)
    }

    /// The integer in `column` as a boolean (non-zero is `true`); `nil` for `NULL`.
    package func bool(at column: Int32) -> Bool? { int(at: column).map { $0 != 0 } }

    /// The text in 0-based `column`; `nil` for `NULL` and non-text values.
    package func string(at column: Int32) -> String? {
        guard sqlite3_column_type(handle, column) == SQLITE_TEXT else { return nil }
        // Ask for the text before its length: https://www.sqlite.org/c3ref/column_blob.html
        guard let text = sqlite3_column_text(handle, column) else { return "" }
        let length = Int(sqlite3_column_bytes(handle, column))
        return String(decoding: UnsafeBufferPointer(start: text, count: length), as: UTF8.self)
    }

    // MARK: Reading the current row, strictly

    // Failing closed (STYLE.md): a column the schema declares NOT NULL, or of one type, that comes
    // back otherwise is a damaged row, and reading it as 0, "" or false would hand a made-up
    // value to the domain (a `verified` of false, a tenant with no secret). These throw instead.

    /// The integer in `column`; NULL or another type throws.
    package func requiredInt(at column: Int32) throws(RowDecodingError) -> Int64 {
        guard let value = try optionalInt(at: column) else { throw decodingError(column, expected: "INTEGER") }
        return value
    }

    /// The bytes of the text in `column`, without making a String; NULL or another type throws.
    /// They are SQLite's: valid until the statement steps, resets or converts this column, so
    /// read them at once. Not a method taking a closure: a generic one called from another module
    /// runs unspecialised.
    package func requiredTextBytes(at column: Int32) throws(RowDecodingError) -> UnsafeRawBufferPointer {
        guard sqlite3_column_type(handle, column) == SQLITE_TEXT else {
            throw decodingError(column, expected: "TEXT")
        }
        // Ask for the text before its length: https://www.sqlite.org/c3ref/column_blob.html
        let text = sqlite3_column_text(handle, column)
        let length = Int(sqlite3_column_bytes(handle, column))
        return UnsafeRawBufferPointer(start: text, count: text == nil ? 0 : length)
    }

    /// The integer in `column`, nil for NULL; another type throws.
    package func optionalInt(at column: Int32) throws(RowDecodingError) -> Int64? {
        switch sqlite3_column_type(handle, column) {
        case SQLITE_NULL: return nil
        case SQLITE_INTEGER: return sqlite3_column_int64(handle, column)
        default: throw decodingError(column, expected: "INTEGER or NULL")
        }
    }

    /// The boolean stored as 0 or 1 in `column`; NULL, another type or another number throws.
    package func requiredBool(at column: Int32) throws(RowDecodingError) -> Bool {
        switch try requiredInt(at: column) {
        case 0: return false
        case 1: return true
        default: throw decodingError(column, expected: "0 or 1")
        }
    }

    /// The text in `column`; NULL or another type throws.
    package func requiredString(at column: Int32) throws(RowDecodingError) -> String {
        guard let value = try optionalString(at: column) else { throw decodingError(column, expected: "TEXT") }
        return value
    }

    /// The text in `column`, nil for NULL; another type throws.
    package func optionalString(at column: Int32) throws(RowDecodingError) -> String? {
        switch sqlite3_column_type(handle, column) {
        case SQLITE_NULL: return nil
        case SQLITE_TEXT: return string(at: column)
        default: throw decodingError(column, expected: "TEXT or NULL")
        }
    }

    private func decodingError(_ column: Int32, expected: String) -> RowDecodingError {
        RowDecodingError(
            column: column < sqlite3_column_count(handle) ? columnNames[Int(column)] : "#\(column)",
            expected: expected, found: SQLiteValue.typeName(sqlite3_column_type(handle, column)), sql: sql)
    }

    private func value(at column: Int32) -> SQLiteValue {
        switch sqlite3_column_type(handle, column) {
        case SQLITE_INTEGER:
            return .integer(sqlite3_column_int64(handle, column))
        case SQLITE_FLOAT:
            return .real(sqlite3_column_double(handle, column))
        case SQLITE_TEXT:
            // Ask for the text before its length: https://www.sqlite.org/c3ref/column_blob.html
            guard let text = sqlite3_column_text(handle, column) else { return .text("") }
            let length = Int(sqlite3_column_bytes(handle, column))
            return .text(String(decoding: UnsafeBufferPointer(start: text, count: length), as: UTF8.self))
        case SQLITE_BLOB:
            // An empty blob comes back as a NULL pointer.
            guard let blob = sqlite3_column_blob(handle, column) else { return .blob([]) }
            let length = Int(sqlite3_column_bytes(handle, column))
            return .blob(Array(UnsafeRawBufferPointer(start: blob, count: length)))
        default:
            return .null
        }
    }

    // MARK: - Conveniences

    /// Binds `arguments`, steps to completion ignoring rows, then resets.
    /// - Parameter arguments: One value per `?` parameter.
    package func run(_ arguments: [any SQLiteBindable] = []) throws {
        defer { reset() }
        try bind(arguments)
        while try step() {}
    }

    /// Runs the statement with the values bound so far (``bind(_:at:)``), then resets it;
    /// the bindings stay for the next run.
    package func runBound() throws {
        defer { reset() }
        while try step() {}
    }

    /// Binds `arguments`, collects every row, then resets.
    /// - Parameter arguments: One value per `?` parameter.
    /// - Returns: The rows, in the order SQLite produced them.
    package func rows(_ arguments: [any SQLiteBindable] = []) throws -> [Row] {
        defer { reset() }
        try bind(arguments)
        var rows: [Row] = []
        while try step() { rows.append(row()) }
        return rows
    }

    /// True between the first `step` and the `reset` (`sqlite3_stmt_busy`).
    var isRunning: Bool { sqlite3_stmt_busy(handle) != 0 }
}

@available(*, unavailable)
extension Statement: Sendable {}

// MARK: - Row

/// The copied values of one result row; independent of the statement once made.
///
/// ```swift
/// if let row = try db.queryOne("SELECT id, email FROM users WHERE id = ?", [id]) {
///     let email = row.string("email")
/// }
/// ```
package struct Row: Sendable, Hashable {
    /// Column names, in result order (shared by all rows of one query).
    package let columnNames: [String]
    /// Values, in the same order as ``columnNames``.
    package let values: [SQLiteValue]

    /// Creates a row from names and values of the same length.
    package init(columnNames: [String], values: [SQLiteValue]) {
        precondition(columnNames.count == values.count, "a row needs one name per value")
        self.columnNames = columnNames
        self.values = values
    }

    /// The value at a 0-based column index.
    package subscript(_ index: Int) -> SQLiteValue {
        values[index]
    }

    /// The value of the column with this name (exact match first, then ASCII case-insensitive,
    /// as SQLite compares identifiers). A name not in the result is a programming error and traps.
    package subscript(_ name: String) -> SQLiteValue {
        values[index(of: name)]
    }

    /// Index of a column name; traps when absent, naming the columns that exist.
    private func index(of name: String) -> Int {
        if let index = columnNames.firstIndex(of: name) { return index }
        let lowered = name.lowercased()
        if let index = columnNames.firstIndex(where: { $0.lowercased() == lowered }) { return index }
        preconditionFailure("no column \"\(name)\" in row; columns: \(columnNames)")
    }

    // MARK: Typed accessors (nil when NULL)

    /// The integer at `index`; a `REAL` with an integral value converts, other types give `nil`.
    package func int(_ index: Int) -> Int64? { Self.int(values[index]) }
    /// The integer in column `name`; see ``int(_:)-(Int)``.
    package func int(_ name: String) -> Int64? { Self.int(self[name]) }
    /// The text at `index`; `nil` for `NULL` and non-text values.
    package func string(_ index: Int) -> String? { Self.string(values[index]) }
    /// The text in column `name`.
    package func string(_ name: String) -> String? { Self.string(self[name]) }
    /// The number at `index` (`REAL`, or `INTEGER` converted); `nil` otherwise.
    package func double(_ index: Int) -> Double? { Self.double(values[index]) }
    /// The number in column `name`.
    package func double(_ name: String) -> Double? { Self.double(self[name]) }
    /// The bytes at `index` (`BLOB`, or the UTF-8 of `TEXT`); `nil` for `NULL` and numbers.
    package func blob(_ index: Int) -> [UInt8]? { Self.blob(values[index]) }
    /// The bytes in column `name`.
    package func blob(_ name: String) -> [UInt8]? { Self.blob(self[name]) }
    /// The integer at `index` as a boolean (non-zero is `true`); `nil` for `NULL`.
    package func bool(_ index: Int) -> Bool? { Self.int(values[index]).map { $0 != 0 } }
    /// The integer in column `name` as a boolean.
    package func bool(_ name: String) -> Bool? { Self.int(self[name]).map { $0 != 0 } }

    // MARK: Strict accessors (see Statement's): NULL or a wrong type throws

    /// The integer in column `name`; NULL or another type throws.
    package func requiredInt(_ name: String) throws(RowDecodingError) -> Int64 {
        guard case .integer(let value) = self[name] else { throw decodingError(name, expected: "INTEGER") }
        return value
    }

    /// The integer in column `name`, nil for NULL; another type throws.
    package func optionalInt(_ name: String) throws(RowDecodingError) -> Int64? {
        switch self[name] {
        case .null: return nil
        case .integer(let value): return value
        default: throw decodingError(name, expected: "INTEGER or NULL")
        }
    }

    /// The text in column `name`; NULL or another type throws.
    package func requiredString(_ name: String) throws(RowDecodingError) -> String {
        guard case .text(let value) = self[name] else { throw decodingError(name, expected: "TEXT") }
        return value
    }

    /// The text in column `name`, nil for NULL; another type throws.
    package func optionalString(_ name: String) throws(RowDecodingError) -> String? {
        switch self[name] {
        case .null: return nil
        case .text(let value): return value
        default: throw decodingError(name, expected: "TEXT or NULL")
        }
    }

    private func decodingError(_ name: String, expected: String) -> RowDecodingError {
        RowDecodingError(column: name, expected: expected, found: self[name].typeName, sql: nil)
    }

    private static func int(_ value: SQLiteValue) -> Int64? {
        switch value {
        case .integer(let value): value
        case .real(let value): Int64(exactly: value)
        default: nil
        }
    }

    private static func string(_ value: SQLiteValue) -> String? {
        if case .text(let text) = value { text } else { nil }
    }

    private static func double(_ value: SQLiteValue) -> Double? {
        switch value {
        case .real(let value): value
        case .integer(let value): Double(value)
        default: nil
        }
    }

    private static func blob(_ value: SQLiteValue) -> [UInt8]? {
        switch value {
        case .blob(let bytes): bytes
        case .text(let text): Array(text.utf8)
        default: nil
        }
    }
}

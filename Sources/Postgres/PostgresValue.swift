// MARK: - Parameters

/// One parameter value, sent in libpq's text format: the server parses it as the type the
/// statement gives the placeholder (<https://www.postgresql.org/docs/15/libpq-exec.html>).
package enum PostgresValue: Sendable, Hashable {
    /// SQL `NULL`.
    case null
    /// A 64-bit integer (`bigint`, narrowed by the server where the column is `integer`).
    case integer(Int64)
    /// A double (`double precision`).
    case double(Double)
    /// Text.
    case text(String)
    /// A boolean, sent as `t`/`f`.
    case bool(Bool)
    /// Raw bytes (`bytea`), sent in hex form.
    case bytes([UInt8])

    /// The text libpq sends, or nil for `NULL`.
    var wireText: String? {
        switch self {
        case .null: nil
        case .integer(let value): String(value)
        case .double(let value):
            value.isFinite ? "\(value)" : (value.isNaN ? "NaN" : (value > 0 ? "Infinity" : "-Infinity"))
        case .text(let value): value
        case .bool(let value): value ? "t" : "f"
        case .bytes(let value): "\\x" + Self.hex(value)
        }
    }

    /// A `text[]` literal (bind it to `$n::text[]`): each element double-quoted with `"` and `\`
    /// escaped, `nil` as an unquoted `NULL`
    /// (<https://www.postgresql.org/docs/15/arrays.html#ARRAYS-IO>).
    package static func textArray(_ items: [String?]) -> PostgresValue {
        // Written as UTF-8 bytes: `"` and `\` are ASCII and never inside another character's
        // encoding. Appended scalar by scalar to a String, the three arrays of each GET batch
        // cost the server ~1 µs a cached GET.
        var out: [UInt8] = []
        out.reserveCapacity(items.reduce(2) { $0 + ($1?.utf8.count ?? 4) + 3 })
        out.append(UInt8(ascii: "{"))
        for (index, item) in items.enumerated() {
            if index > 0 { out.append(UInt8(ascii: ",")) }
            guard let item else {
                out.append(contentsOf: "NULL".utf8)
                continue
            }
            out.append(UInt8(ascii: "\""))
            for byte in item.utf8 {
                if byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") { out.append(UInt8(ascii: "\\")) }
                out.append(byte)
            }
            out.append(UInt8(ascii: "\""))
        }
        out.append(UInt8(ascii: "}"))
        return .text(String(decoding: out, as: UTF8.self))
    }

    /// A `bigint[]` literal (bind it to `$n::bigint[]`): the decimals between braces.
    package static func integerArray(_ items: [Int64]) -> PostgresValue {
        .text("{" + items.map(String.init).joined(separator: ",") + "}")
    }

    private static func hex(_ bytes: [UInt8]) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count * 2)
        for byte in bytes {
            out.append(digits[Int(byte >> 4)])
            out.append(digits[Int(byte & 0x0F)])
        }
        return String(decoding: out, as: UTF8.self)
    }
}

/// A Swift value that can be bound to a `$n` parameter.
///
/// Conforming types: `Int`, `Int64`, `Int32`, `Double`, `String`, `Bool`, `[UInt8]` (bytea),
/// `Optional` of any of them (`nil` binds `NULL`), and ``PostgresValue`` itself.
///
/// ```swift
/// try connection.execute("INSERT INTO t(a, b) VALUES ($1, $2)", [42, "x"])
/// ```
package protocol PostgresBindable {
    /// The value bound to the parameter.
    var postgresValue: PostgresValue { get }
}

extension PostgresValue: PostgresBindable {
    /// The value itself.
    package var postgresValue: PostgresValue { self }
}

extension Int: PostgresBindable {
    /// `.integer`.
    package var postgresValue: PostgresValue { .integer(Int64(self)) }
}

extension Int64: PostgresBindable {
    /// `.integer`.
    package var postgresValue: PostgresValue { .integer(self) }
}

extension Int32: PostgresBindable {
    /// `.integer`.
    package var postgresValue: PostgresValue { .integer(Int64(self)) }
}

extension Double: PostgresBindable {
    /// `.double`.
    package var postgresValue: PostgresValue { .double(self) }
}

extension String: PostgresBindable {
    /// `.text`.
    package var postgresValue: PostgresValue { .text(self) }
}

extension Bool: PostgresBindable {
    /// `.bool`.
    package var postgresValue: PostgresValue { .bool(self) }
}

extension Array: PostgresBindable where Element == UInt8 {
    /// `.bytes`.
    package var postgresValue: PostgresValue { .bytes(self) }
}

extension Optional: PostgresBindable where Wrapped: PostgresBindable {
    /// The wrapped value, or `.null` for `nil`.
    package var postgresValue: PostgresValue {
        switch self {
        case .none: .null
        case .some(let wrapped): wrapped.postgresValue
        }
    }
}

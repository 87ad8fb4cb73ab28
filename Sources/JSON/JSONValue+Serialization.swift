// MARK: - Compact serialization

extension JSONValue {
    /// Appends the compact JSON text of this value to `output` (`JSONWriter.value`'s text).
    ///
    /// Object members come out in stored order; strings escape `"`, `\` and C0 controls
    /// (RFC 8259 §7) and nothing else, so non-ASCII text (U+2028/2029 included) stays as UTF-8.
    /// - Parameters:
    ///   - output: the buffer to append to, e.g. a response body.
    package func serialize(into output: inout [UInt8]) {
        var writer = JSONWriter(capacity: 128)
        writer.value(self)
        writer.withBytes { output.append(contentsOf: $0) }
    }

    /// The compact JSON text of this value.
    package var jsonString: String {
        // A guess, not a count: counting first walked the value twice and cost as much as the
        // serialization (callgrind, outbox event data); most stored JSON is short and the rest grows.
        var writer = JSONWriter(capacity: 128)
        writer.value(self)
        return writer.withBytes { String(decoding: $0, as: UTF8.self) }
    }

    /// The compact JSON text as bytes.
    package var jsonBytes: [UInt8] {
        var writer = JSONWriter(capacity: 128)
        writer.value(self)
        return writer.finish()
    }

    /// Length in bytes of ``serialize(into:)``'s output, computed without building it
    /// (size limits such as "each attribute value at most 1 KiB as JSON").
    package var serializedByteCount: Int {
        switch self {
        case .null: 4
        case .bool(let value): value ? 4 : 5
        case .number(let text): text.utf8.count
        case .string(let string): Self.serializedByteCount(of: string)
        case .array(let elements):
            elements.reduce(2 + max(0, elements.count - 1)) { $0 + $1.serializedByteCount }
        case .object(let object):
            // Braces, commas, and per member a colon.
            object.reduce(2 + max(0, object.count - 1)) {
                $0 + Self.serializedByteCount(of: $1.key) + 1 + $1.value.serializedByteCount
            }
        }
    }

    // MARK: Strings

    /// Bytes the escape of `byte` takes, or 1 when it needs none.
    @inline(__always)
    private static func escapedLength(_ byte: UInt8) -> Int {
        switch byte {
        case UInt8(ascii: "\""), UInt8(ascii: "\\"), 0x08, 0x09, 0x0A, 0x0C, 0x0D: 2
        case ..<0x20: 6
        default: 1
        }
    }

    private static func serializedByteCount(of string: String) -> Int {
        var total = 2
        for byte in string.utf8 { total += escapedLength(byte) }
        return total
    }

    /// `string` as a JSON string, quoted and escaped: what `.string(string).serialize(into:)`
    /// writes, without making the value.
    package static func serialize(string: String, into output: inout [UInt8]) {
        var writer = JSONWriter(capacity: string.utf8.count + 8)
        writer.string(string)
        writer.withBytes { output.append(contentsOf: $0) }
    }
}

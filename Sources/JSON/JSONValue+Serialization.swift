// MARK: - Compact serialization

extension JSONValue {
    /// The compact JSON text of this value (`JSONWriter.value`'s: members in stored order, only
    /// `"`, `\` and C0 controls escaped).
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

    /// Length in bytes of ``jsonBytes``, computed without building it
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
}

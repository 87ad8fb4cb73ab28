import StringBytes

// MARK: - Compact serialization

extension JSONValue {
    /// Appends the compact JSON text of this value to `output`.
    ///
    /// Object members come out in stored order; strings escape `"`, `\` and C0 controls
    /// (RFC 8259 §7) and nothing else, so non-ASCII text (U+2028/2029 included) stays as UTF-8.
    /// - Parameters:
    ///   - output: the buffer to append to, e.g. a response body.
    package func serialize(into output: inout [UInt8]) {
        switch self {
        case .null: output.append(contentsOf: Literal.null)
        case .bool(true): output.append(contentsOf: Literal.true)
        case .bool(false): output.append(contentsOf: Literal.false)
        case .number(let text): output.append(contentsOf: text.utf8)
        case .string(let string): Self.serialize(string: string, into: &output)
        case .array(let elements):
            output.append(UInt8(ascii: "["))
            for (offset, element) in elements.enumerated() {
                if offset > 0 { output.append(UInt8(ascii: ",")) }
                element.serialize(into: &output)
            }
            output.append(UInt8(ascii: "]"))
        case .object(let object):
            output.append(UInt8(ascii: "{"))
            var first = true
            for (key, value) in object {
                if !first { output.append(UInt8(ascii: ",")) }
                first = false
                Self.serialize(string: key, into: &output)
                output.append(UInt8(ascii: ":"))
                value.serialize(into: &output)
            }
            output.append(UInt8(ascii: "}"))
        }
    }

    /// The compact JSON text of this value.
    package var jsonString: String {
        var output: [UInt8] = []
        // A guess, not a count: counting first walked the value twice and cost as much as the
        // serialization (callgrind, outbox event data); most stored JSON is short and the rest grows.
        output.reserveCapacity(128)
        serialize(into: &output)
        return String(decoding: output, as: UTF8.self)
    }

    /// The compact JSON text as bytes.
    package var jsonBytes: [UInt8] {
        var output: [UInt8] = []
        serialize(into: &output)
        return output
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

    private enum Literal {
        static let null: [UInt8] = Array("null".utf8)
        static let `true`: [UInt8] = Array("true".utf8)
        static let `false`: [UInt8] = Array("false".utf8)
    }

    private static let hexDigits: [UInt8] = Array("0123456789abcdef".utf8)

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
    /// writes, without making the value. Clean runs are copied whole.
    package static func serialize(string: String, into output: inout [UInt8]) {
        output.append(UInt8(ascii: "\""))
        withUTF8Bytes(string) { appendEscaped($0, into: &output) }
        output.append(UInt8(ascii: "\""))
    }

    /// Whether one of the eight bytes of `word` is below 0x20, `"` or `\` (SWAR: a byte at or
    /// above the bound never borrows, so each test is exact for "is there one"). The HTTP
    /// scanner has its own copies: a helper in another module is a call per word.
    @inline(__always)
    private static func needsEscape(_ word: UInt64) -> Bool {
        let ones: UInt64 = 0x0101_0101_0101_0101
        let highBits: UInt64 = 0x8080_8080_8080_8080
        func hasZeroByte(_ w: UInt64) -> Bool { (w &- ones) & ~w & highBits != 0 }
        let control = (word &- ones &* 0x20) & ~word & highBits != 0
        return control || hasZeroByte(word ^ (ones &* 0x22)) || hasZeroByte(word ^ (ones &* 0x5C))
    }

    private static func appendEscaped(_ bytes: UnsafeBufferPointer<UInt8>, into output: inout [UInt8]) {
        // Most strings need no escape: find the first byte that does eight bytes at a time
        // (a byte-by-byte walk was ~10 instructions a byte of every string in every answer).
        var clean = 0
        let raw = UnsafeRawBufferPointer(bytes)
        while clean &+ 8 <= raw.count {
            let word = raw.loadUnaligned(fromByteOffset: clean, as: UInt64.self)
            if needsEscape(word) { break }
            clean &+= 8
        }
        var runStart = 0
        for index in clean..<bytes.count {
            let byte = bytes[index]
            guard byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") else { continue }
            // Copy the clean run before this byte in one append, then its escape.
            output.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[runStart..<index]))
            runStart = index + 1
            output.append(UInt8(ascii: "\\"))
            switch byte {
            case UInt8(ascii: "\""), UInt8(ascii: "\\"): output.append(byte)
            case 0x08: output.append(UInt8(ascii: "b"))
            case 0x09: output.append(UInt8(ascii: "t"))
            case 0x0A: output.append(UInt8(ascii: "n"))
            case 0x0C: output.append(UInt8(ascii: "f"))
            case 0x0D: output.append(UInt8(ascii: "r"))
            default:
                output.append(UInt8(ascii: "u"))
                output.append(UInt8(ascii: "0"))
                output.append(UInt8(ascii: "0"))
                output.append(hexDigits[Int(byte >> 4)])
                output.append(hexDigits[Int(byte & 0x0F)])
            }
        }
        output.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[runStart...]))
    }
}

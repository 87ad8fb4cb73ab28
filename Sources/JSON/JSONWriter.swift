import StringBytes

/// JSON text written piece by piece into memory of its own: the answers of the API, the
/// envelope around them, and every value's compact serialisation.
///
/// Not an `[UInt8]`: each `Array.append(contentsOf:)` goes through the array's uniqueness and
/// capacity checks and a generic copy, ~90 instructions for a 12-byte literal, and a rendered
/// subscriber made ~50 of them (callgrind, uncached GET). Here an append is one capacity check
/// and a copy. Noncopyable, so its memory has one owner and is freed once; `finish()` hands the
/// text over as an array.
package struct JSONWriter: ~Copyable {
    @usableFromInline var start: UnsafeMutablePointer<UInt8>
    @usableFromInline var count = 0
    @usableFromInline var capacity: Int

    /// An empty writer with room for `capacity` bytes before it grows.
    @inlinable
    package init(capacity: Int) {
        self.capacity = Swift.max(capacity, 16)
        start = .allocate(capacity: self.capacity)
    }

    deinit { start.deallocate() }

    /// Bytes written so far.
    @inlinable package var byteCount: Int { count }

    /// The text written, as an array (one copy); the writer's own memory is freed.
    @inlinable
    package consuming func finish() -> [UInt8] {
        [UInt8](UnsafeBufferPointer(start: start, count: count))
    }

    /// The text written so far, lent to `body`.
    @inlinable
    package func withBytes<R>(_ body: (UnsafeBufferPointer<UInt8>) throws -> R) rethrows -> R {
        try body(UnsafeBufferPointer(start: start, count: count))
    }

    /// Forgets the last `n` bytes written (a closing brace to write on after).
    @inlinable
    package mutating func dropLast(_ n: Int) {
        precondition(n >= 0 && n <= count, "dropLast past the start")
        count &-= n
    }

    // MARK: Raw bytes

    @inlinable @inline(__always)
    package mutating func append(_ byte: UInt8) {
        if count == capacity { grow(by: 1) }
        start[count] = byte
        count &+= 1
    }

    @inlinable @inline(__always)
    package mutating func append(_ bytes: UnsafeRawBufferPointer) {
        guard let base = bytes.baseAddress, !bytes.isEmpty else { return }
        if capacity &- count < bytes.count { grow(by: bytes.count) }
        UnsafeMutableRawPointer(start + count).copyMemory(from: base, byteCount: bytes.count)
        count &+= bytes.count
    }

    @inlinable
    package mutating func append(_ bytes: UnsafeBufferPointer<UInt8>) { append(UnsafeRawBufferPointer(bytes)) }

    @inlinable
    package mutating func append(_ bytes: [UInt8]) { bytes.withUnsafeBytes { append($0) } }

    /// Text of our own that is already valid JSON where it goes (punctuation, member names).
    @inlinable @inline(__always)
    package mutating func literal(_ text: StaticString) {
        append(UnsafeRawBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount))
    }

    /// Lends `body` room for at most `limit` bytes at the end; it returns how many it wrote.
    @inlinable
    package mutating func write(upTo limit: Int, _ body: (UnsafeMutableBufferPointer<UInt8>) -> Int) {
        if capacity &- count < limit { grow(by: limit) }
        let written = body(UnsafeMutableBufferPointer(start: start + count, count: limit))
        precondition(written >= 0 && written <= limit, "wrote past the room it was lent")
        count &+= written
    }

    /// Room for `needed` more bytes: at least double, so a long text grows in few steps.
    @usableFromInline
    mutating func grow(by needed: Int) {
        let newCapacity = Swift.max(capacity &* 2, count &+ needed)
        let moved = UnsafeMutablePointer<UInt8>.allocate(capacity: newCapacity)
        moved.initialize(from: start, count: count)
        start.deallocate()
        start = moved
        capacity = newCapacity
    }

    // MARK: JSON

    /// `string` quoted and escaped as `JSONValue.string(string)` serialises.
    package mutating func string(_ string: String) {
        append(UInt8(ascii: "\""))
        withUTF8Bytes(string) { appendEscaped($0) }
        append(UInt8(ascii: "\""))
    }

    /// The string, or `null`.
    package mutating func string(_ string: String?) {
        if let string { self.string(string) } else { literal("null") }
    }

    /// A member name and its colon.
    package mutating func key(_ name: String) {
        string(name)
        append(UInt8(ascii: ":"))
    }

    package mutating func bool(_ value: Bool) { value ? literal("true") : literal("false") }

    /// A JSON number's text as it was read or made (already valid JSON).
    package mutating func number(_ text: String) { withUTF8Bytes(text) { append($0) } }

    /// A decimal integer, digits written in place.
    package mutating func integer(_ value: Int64) {
        var digits = 1
        var rest = value.magnitude / 10
        while rest > 0 {
            digits &+= 1
            rest /= 10
        }
        let length = value < 0 ? digits &+ 1 : digits
        write(upTo: length) { room in
            var magnitude = value.magnitude
            for index in stride(from: length &- 1, through: length &- digits, by: -1) {
                room[index] = UInt8(truncatingIfNeeded: 48 &+ magnitude % 10)
                magnitude /= 10
            }
            if value < 0 { room[0] = UInt8(ascii: "-") }
            return length
        }
    }

    /// The compact JSON text of `value`: object members in stored order; strings escape `"`, `\`
    /// and C0 controls (RFC 8259 §7) and nothing else, so non-ASCII text (U+2028/2029 included)
    /// stays as UTF-8.
    package mutating func value(_ value: JSONValue) {
        switch value {
        case .null: literal("null")
        case .bool(let flag): bool(flag)
        case .number(let text): number(text)
        case .string(let text): string(text)
        case .array(let elements):
            append(UInt8(ascii: "["))
            for (offset, element) in elements.enumerated() {
                if offset > 0 { append(UInt8(ascii: ",")) }
                self.value(element)
            }
            append(UInt8(ascii: "]"))
        case .object(let object):
            append(UInt8(ascii: "{"))
            var first = true
            for (key, member) in object {
                if !first { append(UInt8(ascii: ",")) }
                first = false
                self.key(key)
                self.value(member)
            }
            append(UInt8(ascii: "}"))
        }
    }

    // MARK: Escaping

    private static let hexDigits: StaticString = "0123456789abcdef"

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

    private mutating func appendEscaped(_ bytes: UnsafeBufferPointer<UInt8>) {
        // Most strings need no escape: find the first byte that does eight bytes at a time
        // (a byte-by-byte walk was ~10 instructions a byte of every string in every answer).
        var clean = 0
        let raw = UnsafeRawBufferPointer(bytes)
        while clean &+ 8 <= raw.count {
            let word = raw.loadUnaligned(fromByteOffset: clean, as: UInt64.self)
            if Self.needsEscape(word) { break }
            clean &+= 8
        }
        var runStart = 0
        for index in clean..<bytes.count {
            let byte = bytes[index]
            guard byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") else { continue }
            // Copy the clean run before this byte in one append, then its escape.
            append(UnsafeBufferPointer(rebasing: bytes[runStart..<index]))
            runStart = index + 1
            append(UInt8(ascii: "\\"))
            switch byte {
            case UInt8(ascii: "\""), UInt8(ascii: "\\"): append(byte)
            case 0x08: append(UInt8(ascii: "b"))
            case 0x09: append(UInt8(ascii: "t"))
            case 0x0A: append(UInt8(ascii: "n"))
            case 0x0C: append(UInt8(ascii: "f"))
            case 0x0D: append(UInt8(ascii: "r"))
            default:
                literal("u00")
                append(Self.hexDigits.utf8Start[Int(byte >> 4)])
                append(Self.hexDigits.utf8Start[Int(byte & 0x0F)])
            }
        }
        append(UnsafeBufferPointer(rebasing: bytes[runStart...]))
    }
}

// Byte classes of RFC 9110 §5.6 and RFC 9112, as branch-light predicates over `UInt8`.
// Bitmasks instead of lookup arrays: a global array costs a lazy-initialisation check per access.

/// Named bytes and character-class predicates used by the parsers.
enum HTTPBytes {
    static let cr: UInt8 = 0x0D
    static let lf: UInt8 = 0x0A
    static let sp: UInt8 = 0x20
    static let htab: UInt8 = 0x09
    static let colon: UInt8 = 0x3A
    static let semicolon: UInt8 = 0x3B
    static let slash: UInt8 = 0x2F
    static let asterisk: UInt8 = 0x2A

    /// Whether `b` is in the ASCII set given as two bitmasks: bit n of `low` is byte n (0–63),
    /// bit n of `high` is byte 64 + n (64–127). Bytes from 128 are in no such set.
    @inline(__always)
    static func isIn(_ b: UInt8, low: UInt64, high: UInt64) -> Bool {
        if b < 64 { return (low >> UInt64(b)) & 1 != 0 }
        if b < 128 { return (high >> UInt64(b &- 64)) & 1 != 0 }
        return false
    }

    /// `tchar` (RFC 9110 §5.6.2): `!#$%&'*+-.^_`|~`, digits and letters.
    @inline(__always)
    static func isTchar(_ b: UInt8) -> Bool {
        isIn(b, low: 0x03FF_6CFA_0000_0000, high: 0x57FF_FFFF_C7FF_FFFE)
    }

    /// A byte allowed inside a field value: VCHAR, obs-text, SP or HTAB (RFC 9110 §5.5).
    /// Everything else (NUL, CR, LF, other controls, DEL) is refused.
    @inline(__always)
    static func isFieldValueByte(_ b: UInt8) -> Bool {
        b == htab || (b >= 0x20 && b != 0x7F)
    }

    /// A byte allowed in the request target: visible ASCII only (RFC 3986 never needs more).
    @inline(__always)
    static func isTargetByte(_ b: UInt8) -> Bool {
        b >= 0x21 && b <= 0x7E
    }

    /// The value of a hex digit, or nil.
    @inline(__always)
    static func hexValue(_ b: UInt8) -> Int? {
        switch b {
        case 0x30...0x39: Int(b &- 0x30)
        case 0x41...0x46: Int(b &- 0x41 &+ 10)
        case 0x61...0x66: Int(b &- 0x61 &+ 10)
        default: nil
        }
    }

    @inline(__always)
    static func isOWS(_ b: UInt8) -> Bool { b == sp || b == htab }

    // Eight bytes at a time (SWAR, little-endian loads): the scanner skips runs of ordinary
    // bytes with one test per word and looks at bytes one by one only in the word where
    // something happens (the CR ending a line, a tab, a byte to refuse). Each test is exact for
    // "is there such a byte in the word", not for which one.

    private static let ones: UInt64 = 0x0101_0101_0101_0101
    private static let highBits: UInt64 = 0x8080_8080_8080_8080

    /// Whether a byte of `word` is below `n` (n ≤ 128): a byte at or above `n` never borrows.
    @inline(__always)
    static func hasByte(below n: UInt64, in word: UInt64) -> Bool {
        (word &- ones &* n) & ~word & highBits != 0
    }

    /// Whether a byte of `word` equals `byte`.
    @inline(__always)
    static func hasByte(_ byte: UInt8, in word: UInt64) -> Bool {
        hasByte(below: 1, in: word ^ (ones &* UInt64(byte)))
    }

    /// Whether all eight bytes are field-value bytes other than HTAB: 0x20–0x7E and obs-text.
    @inline(__always)
    static func isPlainFieldValueWord(_ word: UInt64) -> Bool {
        !hasByte(below: 0x20, in: word) && !hasByte(0x7F, in: word)
    }

    /// Whether all eight bytes are target bytes (`isTargetByte`): 0x21–0x7E.
    @inline(__always)
    static func isTargetWord(_ word: UInt64) -> Bool {
        word & highBits == 0 && !hasByte(below: 0x21, in: word) && !hasByte(0x7F, in: word)
    }
}

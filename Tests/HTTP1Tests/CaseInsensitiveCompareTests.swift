import Testing

@testable import HTTP1

/// `asciiCaseInsensitiveEqual` compares eight bytes at a time; it must answer what a byte-by-byte
/// comparison folding only `A`–`Z` answers, for every length and byte value (obs-text and the
/// neighbours of the letters, `@ [ ` { ^ ~`, included).
@Suite struct CaseInsensitiveCompareTests {
    /// The rule, one byte at a time.
    static func reference(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        func lower(_ byte: UInt8) -> UInt8 { (65...90).contains(byte) ? byte | 0x20 : byte }
        return a.count == b.count && zip(a, b).allSatisfy { lower($0) == lower($1) }
    }

    static func compare(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        a.withUnsafeBufferPointer { x in b.withUnsafeBufferPointer { y in HTTPHeaders.asciiCaseInsensitiveEqual(x, y) }
        }
    }

    /// Each byte value against each byte value, at each position of names 1 to 20 bytes long.
    @Test func everyPairOfBytesAtEveryPosition() {
        var wrong = 0
        var equalSeen = 0
        for length in [1, 7, 8, 9, 13, 16, 20] {
            for position in stride(from: 0, to: length, by: max(1, length / 3)) {
                for x in 0...255 {
                    for y in [x, x ^ 0x20, x ^ 0x80, x ^ 0x01, 0x41, 0x61, 0x5B, 0x7B, 0x40, 0x60, 0x5E, 0x7E] {
                        var a = Array("Authorization-Header".utf8.prefix(length))
                        var b = Array("aUTHORIZATION-hEADER".utf8.prefix(length))
                        a[position] = UInt8(x)
                        b[position] = UInt8(y & 0xFF)
                        let expected = Self.reference(a, b)
                        if expected { equalSeen += 1 }
                        if Self.compare(a, b) != expected { wrong += 1 }
                    }
                }
            }
        }
        #expect(wrong == 0)
        #expect(equalSeen > 1000)  // the pairs exercise both answers
    }

    @Test func randomPairs() {
        let alphabet: [UInt8] = Array("aAzZ-_^~@`[{09".utf8) + [0x80, 0xC3, 0xFF, 0x00, 0x7F]
        var generator = SystemRandomNumberGenerator()
        var wrong = 0
        for _ in 0..<50_000 {
            let length = Int.random(in: 0...24, using: &generator)
            let a = (0..<length).map { _ in alphabet.randomElement(using: &generator)! }
            // Mostly the same bytes with some letters' case flipped, sometimes one byte changed.
            var b = a.map { byte in (byte | 0x20) >= 97 && (byte | 0x20) <= 122 && Bool.random() ? byte ^ 0x20 : byte }
            if length > 0 && Int.random(in: 0..<4, using: &generator) == 0 {
                b[Int.random(in: 0..<length, using: &generator)] = alphabet.randomElement(using: &generator)!
            }
            if Self.compare(a, b) != Self.reference(a, b) { wrong += 1 }
        }
        #expect(wrong == 0)
    }

    @Test func differentLengthsDiffer() {
        #expect(!Self.compare(Array("Host".utf8), Array("Hosts".utf8)))
        #expect(Self.compare([], []))
    }
}

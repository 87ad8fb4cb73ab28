import Testing

@testable import HTTP1

/// The word-at-a-time tests the scanner skips runs with must answer exactly what the byte
/// predicates answer for the eight bytes, or a refused byte could slip through in a run.
@Suite struct ByteWordTests {
    static func word(_ bytes: [UInt8]) -> UInt64 {
        bytes.enumerated().reduce(0) { $0 | UInt64($1.element) << (8 * UInt64($1.offset)) }
    }

    /// Every byte value at every position of a word otherwise made of `filler`.
    @Test(arguments: [UInt8(ascii: "a"), 0x20, 0x7E, 0x80, 0xFF, 0x21])
    func eachByteAtEachPosition(_ filler: UInt8) {
        var wrong = 0
        for position in 0..<8 {
            for value in 0...255 {
                var bytes = [UInt8](repeating: filler, count: 8)
                bytes[position] = UInt8(value)
                wrong += check(bytes) ? 0 : 1
            }
        }
        #expect(wrong == 0)
    }

    /// Random words, biased towards the edges of the classes.
    @Test func randomWords() {
        let edges: [UInt8] = [0x00, 0x01, 0x09, 0x0D, 0x0A, 0x1F, 0x20, 0x21, 0x7E, 0x7F, 0x80, 0xFF]
        var generator = SystemRandomNumberGenerator()
        var wrong = 0
        for _ in 0..<100_000 {
            let bytes = (0..<8).map { _ in
                Bool.random(using: &generator) ? edges.randomElement(using: &generator)! : UInt8.random(in: 0...255)
            }
            wrong += check(bytes) ? 0 : 1
        }
        #expect(wrong == 0)
    }

    private func check(_ bytes: [UInt8]) -> Bool {
        let w = Self.word(bytes)
        let plain = bytes.allSatisfy { HTTPBytes.isFieldValueByte($0) && $0 != HTTPBytes.htab }
        let target = bytes.allSatisfy(HTTPBytes.isTargetByte)
        let hasCR = bytes.contains(HTTPBytes.cr)
        return HTTPBytes.isPlainFieldValueWord(w) == plain && HTTPBytes.isTargetWord(w) == target
            && HTTPBytes.hasByte(HTTPBytes.cr, in: w) == hasCR
    }
}

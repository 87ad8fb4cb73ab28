import Crypto
import Testing

@Suite struct Base64Tests {
    // RFC 4648 §10 test vectors.
    static let vectors: [(String, String)] = [
        ("", ""), ("f", "Zg=="), ("fo", "Zm8="), ("foo", "Zm9v"), ("foob", "Zm9vYg=="),
        ("fooba", "Zm9vYmE="), ("foobar", "Zm9vYmFy"),
    ]

    @Test(arguments: vectors) func rfc4648Vectors(plain: String, encoded: String) {
        #expect(Base64.encode(Array(plain.utf8)) == encoded)
        #expect(Base64.decode(encoded) == Array(plain.utf8))
    }

    @Test func usesTheStandardAlphabet() {
        // 0xFB 0xFF encodes to characters that differ between the two alphabets.
        #expect(Base64.encode([0xFB, 0xFF, 0xBF]) == "+/+/")
        #expect(Base64URL.encode([0xFB, 0xFF, 0xBF]) == "-_-_")
    }

    @Test func roundTripsEveryLength() {
        for length in 0..<70 {
            let bytes = (0..<length).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 11) }
            #expect(Base64.decode(Base64.encode(bytes)) == bytes, "length \(length)")
        }
    }

    @Test(arguments: [
        "Zg", "Zg=", "Zm9v=", "Zh==", "Zm9=", "Z===", "=Zg=", "Zg==Zg==", "Zm9-", "Zm9_", "Zm 9v", "Zm9v\n",
    ])
    func refusesNonCanonical(input: String) {
        #expect(Base64.decode(input) == nil)
    }
}

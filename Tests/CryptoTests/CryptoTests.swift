import Crypto
import Testing

/// Bytes of a hex literal; test vectors are written the way the RFCs print them.
private func bytes(_ hex: String) -> [UInt8] {
    Hex.decode(hex)!
}

private func repeated(_ byte: UInt8, _ count: Int) -> [UInt8] {
    [UInt8](repeating: byte, count: count)
}

@Suite struct DigestTests {
    // FIPS 180-2 appendix B.1 and the well-known empty-string digest.
    @Test func sha256Vectors() {
        #expect(Hex.encode(Digest.sha256("")) == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        #expect(Hex.encode(Digest.sha256("abc")) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        #expect(
            Hex.encode(Digest.sha256("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"))
                == "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1")
    }

    @Test func collectionOverloadsAgree() {
        let text = "héllo wörld"
        let expected = Digest.sha256(text)
        #expect(Digest.sha256(Array(text.utf8)) == expected)
        #expect(Digest.sha256(Array(text.utf8)[...]) == expected)
        // A non-contiguous collection takes the copying path.
        #expect(Digest.sha256(text.utf8.lazy.map { $0 }) == expected)
        #expect(Digest.sha256([UInt8]()) == Digest.sha256(""))
    }
}

@Suite struct HMACTests {
    struct Vector: Sendable, CustomTestStringConvertible {
        let name: String, key: [UInt8], data: [UInt8], mac: String
        var testDescription: String { name }
    }

    // RFC 4231 §4.2–4.8 (HMAC-SHA-256 column).
    static let vectors: [Vector] = [
        Vector(
            name: "RFC 4231 case 1", key: repeated(0x0b, 20), data: Array("Hi There".utf8),
            mac: "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7"),
        Vector(
            name: "RFC 4231 case 2", key: Array("Jefe".utf8), data: Array("what do ya want for nothing?".utf8),
            mac: "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"),
        Vector(
            name: "RFC 4231 case 3", key: repeated(0xaa, 20), data: repeated(0xdd, 50),
            mac: "773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe"),
        Vector(
            name: "RFC 4231 case 4", key: bytes("0102030405060708090a0b0c0d0e0f10111213141516171819"),
            data: repeated(0xcd, 50),
            mac: "82558a389a443c0ea4cc819899f2083a85f0faa3e578f8077a2e3ff46729665b"),
        Vector(
            name: "RFC 4231 case 6", key: repeated(0xaa, 131),
            data: Array("Test Using Larger Than Block-Size Key - Hash Key First".utf8),
            mac: "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54"),
        Vector(
            name: "RFC 4231 case 7", key: repeated(0xaa, 131),
            data: Array(
                ("This is a test using a larger than block-size key and a larger than block-size data."
                    + " The key needs to be hashed before being used by the HMAC algorithm.").utf8),
            mac: "9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2"),
    ]

    @Test(arguments: vectors) func rfc4231(_ vector: Vector) {
        #expect(Hex.encode(HMAC.sha256(key: vector.key, message: vector.data)) == vector.mac)
    }

    // Case 5 publishes only the first 128 bits.
    @Test func rfc4231Case5Truncated() {
        let mac = HMAC.sha256(key: repeated(0x0c, 20), message: Array("Test With Truncation".utf8))
        #expect(Hex.encode(Array(mac.prefix(16))) == "a3b6167473100ee06e0c796c2955552b")
    }

    @Test func emptyKeyAndMessage() {
        // python3: hmac.new(b'', b'', hashlib.sha256).hexdigest()
        #expect(
            Hex.encode(HMAC.sha256(key: [], message: []))
                == "b613679a0814d9ec772f95d778c35fc5ff1697c493715653c6c712144292c5ad")
    }
}

@Suite struct ConstantTimeTests {
    @Test func compares() {
        #expect(constantTimeEquals([], []))
        #expect(constantTimeEquals([1, 2, 3], [1, 2, 3]))
        #expect(!constantTimeEquals([1, 2, 3], [1, 2, 4]))
        #expect(!constantTimeEquals([0, 2, 3], [1, 2, 3]))
        #expect(!constantTimeEquals([1, 2, 3], [1, 2]))
        #expect(!constantTimeEquals([], [0]))
    }
}

@Suite struct SecureRandomTests {
    @Test func byteCounts() {
        for count in [0, 1, 16, 32, 1000] {
            #expect(SecureRandom.bytes(count).count == count)
        }
        // 64 zero bytes from a working CSPRNG has probability 2^-512.
        #expect(SecureRandom.bytes(64).contains { $0 != 0 })
        #expect(SecureRandom.bytes(32) != SecureRandom.bytes(32))
    }

    @Test func tokensUseTheAlphabet() {
        let base62 = Set(SecureRandom.base62)
        for length in [0, 1, 22, 43, 500] {
            let token = SecureRandom.token(length: length)
            #expect(token.utf8.count == length)
            #expect(token.utf8.allSatisfy(base62.contains))
        }
        let hex = SecureRandom.token(length: 64, alphabet: Array("0123456789abcdef".utf8))
        #expect(Hex.decode(hex)?.count == 32)
    }

    @Test func tokensCoverTheAlphabet() {
        // 20 000 draws over 62 symbols: every symbol shows up, none dominates (expected ~323 each).
        var counts: [UInt8: Int] = [:]
        for byte in SecureRandom.token(length: 20_000).utf8 { counts[byte, default: 0] += 1 }
        #expect(counts.count == 62)
        #expect(counts.values.allSatisfy { (200...450).contains($0) })
    }
}

@Suite struct HexTests {
    @Test func roundTrip() {
        let all = [UInt8](0...255)
        #expect(Hex.decode(Hex.encode(all)) == all)
        #expect(Hex.encode([0x00, 0xAB, 0xff]) == "00abff")
        #expect(Hex.decode("00ABff") == [0x00, 0xab, 0xff])
        #expect(Hex.decode("") == [])
        #expect(Hex.encode([]) == "")
    }

    @Test(arguments: ["0", "abc", "0g", "zz", " 00", "00 ", "0x00", "é0", "+1"])
    func rejects(_ text: String) {
        #expect(Hex.decode(text) == nil)
    }
}

@Suite struct Base64URLTests {
    // RFC 4648 §10 vectors, unpadded.
    @Test(arguments: [
        ("", ""), ("f", "Zg"), ("fo", "Zm8"), ("foo", "Zm9v"), ("foob", "Zm9vYg"),
        ("fooba", "Zm9vYmE"), ("foobar", "Zm9vYmFy"),
    ])
    func rfc4648(_ plain: String, _ encoded: String) {
        #expect(Base64URL.encode(Array(plain.utf8)) == encoded)
        #expect(Base64URL.decode(encoded) == Array(plain.utf8))
    }

    @Test func urlSafeAlphabet() {
        #expect(Base64URL.encode([0xfb, 0xff, 0xbf]) == "-_-_")
        #expect(Base64URL.decode("-_-_") == [0xfb, 0xff, 0xbf])
    }

    @Test func roundTripsEveryLength() {
        for length in 0...70 {
            let data = SecureRandom.bytes(length)
            let text = Base64URL.encode(data)
            #expect(!text.contains("="))
            #expect(Base64URL.decode(text) == data)
        }
    }

    @Test(arguments: [
        "Zg==",  // padding
        "Zm8=",  // padding
        "Z",  // length 4k+1
        "Zm9vY",  // length 4k+1
        "Zm9v+g",  // standard-alphabet '+'
        "Zm9v/g",  // standard-alphabet '/'
        "Zm 9v",  // whitespace
        "Zh",  // non-zero trailing bits ("Zg" is canonical)
        "Zm9",  // non-zero trailing bits ("Zm8" is canonical)
        "Zm9v\n",  // newline
        "Zm9vé",  // non-ASCII
    ])
    func rejects(_ text: String) {
        #expect(Base64URL.decode(text) == nil)
    }
}

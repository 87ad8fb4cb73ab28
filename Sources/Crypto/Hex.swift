/// Base16 encoding (RFC 4648 §8) as used for digests and identity hashes.
package enum Hex {
    private static let digits: [UInt8] = Array("0123456789abcdef".utf8)

    /// Lowercase hex of `bytes`.
    package static func encode(_ bytes: [UInt8]) -> String {
        var output: [UInt8] = []
        output.reserveCapacity(bytes.count * 2)
        for byte in bytes {
            output.append(digits[Int(byte >> 4)])
            output.append(digits[Int(byte & 0x0F)])
        }
        return String(decoding: output, as: UTF8.self)
    }

    /// Bytes of `string`, or nil unless it is an even number of hex digits (either case).
    package static func decode(_ string: String) -> [UInt8]? {
        let utf8 = string.utf8
        guard utf8.count % 2 == 0 else { return nil }
        var output: [UInt8] = []
        output.reserveCapacity(utf8.count / 2)
        var high: UInt8? = nil
        for char in utf8 {
            guard let nibble = value(of: char) else { return nil }
            if let h = high {
                output.append(h << 4 | nibble)
                high = nil
            } else {
                high = nibble
            }
        }
        return output
    }

    /// Value of one hex digit, or nil.
    private static func value(of char: UInt8) -> UInt8? {
        switch char {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): char - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): char - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): char - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}

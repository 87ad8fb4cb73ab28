/// The URL- and filename-safe base64 alphabet (RFC 4648 §5) without padding, as JWS uses it
/// (RFC 7515 §2, "Base64url Encoding").
package enum Base64URL {
    private static let alphabet: [UInt8] = Array(
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    /// Reverse table: 0...63 for alphabet bytes, 0xFF for everything else.
    private static let values: [UInt8] = {
        var table = [UInt8](repeating: 0xFF, count: 256)
        for (index, char) in alphabet.enumerated() { table[Int(char)] = UInt8(index) }
        return table
    }()

    /// Unpadded base64url of `bytes`.
    package static func encode(_ bytes: [UInt8]) -> String {
        var output: [UInt8] = []
        output.reserveCapacity((bytes.count * 4 + 2) / 3)
        var index = 0
        while index + 3 <= bytes.count {
            let group = UInt32(bytes[index]) << 16 | UInt32(bytes[index + 1]) << 8 | UInt32(bytes[index + 2])
            output.append(alphabet[Int(group >> 18 & 63)])
            output.append(alphabet[Int(group >> 12 & 63)])
            output.append(alphabet[Int(group >> 6 & 63)])
            output.append(alphabet[Int(group & 63)])
            index += 3
        }
        switch bytes.count - index {
        case 1:
            let group = UInt32(bytes[index]) << 16
            output.append(alphabet[Int(group >> 18 & 63)])
            output.append(alphabet[Int(group >> 12 & 63)])
        case 2:
            let group = UInt32(bytes[index]) << 16 | UInt32(bytes[index + 1]) << 8
            output.append(alphabet[Int(group >> 18 & 63)])
            output.append(alphabet[Int(group >> 12 & 63)])
            output.append(alphabet[Int(group >> 6 & 63)])
        default:
            break
        }
        return String(decoding: output, as: UTF8.self)
    }

    /// Bytes of `string`, or nil unless it is canonical unpadded base64url.
    ///
    /// Strict because tokens are compared and signed as text: `=` padding, characters outside
    /// the alphabet, a length of 4k+1 and non-zero unused trailing bits are all refused, so
    /// each byte string has exactly one accepted encoding.
    package static func decode(_ string: String) -> [UInt8]? {
        var string = string
        return string.withUTF8 { decode(bytes: $0) }
    }

    /// ``decode(_:)`` over raw UTF-8 bytes, for callers that already hold them.
    package static func decode(bytes input: UnsafeBufferPointer<UInt8>) -> [UInt8]? {
        let remainder = input.count % 4
        guard remainder != 1 else { return nil }
        var output: [UInt8] = []
        output.reserveCapacity(input.count / 4 * 3 + 2)
        var index = 0
        while index + 4 <= input.count {
            let a = values[Int(input[index])], b = values[Int(input[index + 1])]
            let c = values[Int(input[index + 2])], d = values[Int(input[index + 3])]
            // Invalid characters map to 0xFF, so any high bit set means "not in the alphabet".
            guard (a | b | c | d) & 0xC0 == 0 else { return nil }
            let group = UInt32(a) << 18 | UInt32(b) << 12 | UInt32(c) << 6 | UInt32(d)
            output.append(UInt8(truncatingIfNeeded: group >> 16))
            output.append(UInt8(truncatingIfNeeded: group >> 8))
            output.append(UInt8(truncatingIfNeeded: group))
            index += 4
        }
        switch remainder {
        case 2:
            let a = values[Int(input[index])], b = values[Int(input[index + 1])]
            guard (a | b) & 0xC0 == 0, b & 0x0F == 0 else { return nil }
            output.append(a << 2 | b >> 4)
        case 3:
            let a = values[Int(input[index])], b = values[Int(input[index + 1])]
            let c = values[Int(input[index + 2])]
            guard (a | b | c) & 0xC0 == 0, c & 0x03 == 0 else { return nil }
            output.append(a << 2 | b >> 4)
            output.append(b << 4 | c >> 2)
        default:
            break
        }
        return output
    }
}

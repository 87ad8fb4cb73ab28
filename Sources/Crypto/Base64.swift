/// The standard base64 alphabet with `=` padding (RFC 4648 §4), as Standard Webhooks uses it for
/// secrets and signatures. Tokens use ``Base64URL`` instead.
package enum Base64 {
    private static let alphabet: [UInt8] = Array(
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)
    private static let pad = UInt8(ascii: "=")

    /// Reverse table: 0...63 for alphabet bytes, 0xFF for everything else.
    private static let values: [UInt8] = {
        var table = [UInt8](repeating: 0xFF, count: 256)
        for (index, char) in alphabet.enumerated() { table[Int(char)] = UInt8(index) }
        return table
    }()

    /// Padded base64 of `bytes`.
    package static func encode(_ bytes: [UInt8]) -> String {
        var output: [UInt8] = []
        output.reserveCapacity((bytes.count + 2) / 3 * 4)
        var index = 0
        while index < bytes.count {
            let remaining = bytes.count - index
            let b0 = UInt32(bytes[index])
            let b1 = remaining > 1 ? UInt32(bytes[index + 1]) : 0
            let b2 = remaining > 2 ? UInt32(bytes[index + 2]) : 0
            let group = b0 << 16 | b1 << 8 | b2
            output.append(alphabet[Int(group >> 18 & 63)])
            output.append(alphabet[Int(group >> 12 & 63)])
            output.append(remaining > 1 ? alphabet[Int(group >> 6 & 63)] : pad)
            output.append(remaining > 2 ? alphabet[Int(group & 63)] : pad)
            index += 3
        }
        return String(decoding: output, as: UTF8.self)
    }

    /// Bytes of `string`, or nil unless it is canonical padded base64.
    ///
    /// Strict for the same reason as ``Base64URL/decode(_:)``: a length that is not a multiple
    /// of 4, characters outside the alphabet, misplaced `=` and non-zero unused bits are refused,
    /// so a secret has exactly one accepted spelling.
    package static func decode(_ string: String) -> [UInt8]? {
        let input = Array(string.utf8)
        guard input.count % 4 == 0 else { return nil }
        var output: [UInt8] = []
        output.reserveCapacity(input.count / 4 * 3)
        var index = 0
        while index < input.count {
            let isLast = index + 4 == input.count
            let padding = isLast ? (input[index + 3] == pad ? (input[index + 2] == pad ? 2 : 1) : 0) : 0
            var group: UInt32 = 0
            for offset in 0..<4 {
                let char = input[index + offset]
                if offset >= 4 - padding {
                    group <<= 6
                    continue
                }
                let value = values[Int(char)]
                guard value != 0xFF else { return nil }
                group = group << 6 | UInt32(value)
            }
            // Bits that padding leaves unused must be zero, or two strings would decode alike.
            if padding == 1 { guard group & 0xFF == 0 else { return nil } }
            if padding == 2 { guard group & 0xFFFF == 0 else { return nil } }
            output.append(UInt8(truncatingIfNeeded: group >> 16))
            if padding < 2 { output.append(UInt8(truncatingIfNeeded: group >> 8)) }
            if padding < 1 { output.append(UInt8(truncatingIfNeeded: group)) }
            index += 4
        }
        return output
    }
}

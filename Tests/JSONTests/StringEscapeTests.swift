import JSON
import Testing

/// The serializer skips clean runs eight bytes at a time; whatever the position of a byte to
/// escape, the text must be what escaping byte by byte gives.
@Suite struct StringEscapeTests {
    /// RFC 8259 §7, byte by byte: the reference the fast path must match.
    static func reference(_ string: String) -> String {
        var out = "\""
        for scalar in string.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\u{8}": out += "\\b"
            case "\t": out += "\\t"
            case "\n": out += "\\n"
            case "\u{C}": out += "\\f"
            case "\r": out += "\\r"
            case _ where scalar.value < 0x20:
                let hex = String(scalar.value, radix: 16)
                out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out + "\""
    }

    @Test func everySpecialAtEveryPosition() {
        let specials: [Unicode.Scalar] = (0..<0x20).map { Unicode.Scalar($0)! } + ["\"", "\\", "\u{7F}", "é", "🐝"]
        var wrong: [String] = []
        for length in [1, 7, 8, 9, 16, 17, 23] {
            for position in 0..<length {
                for special in specials {
                    var scalars = String.UnicodeScalarView(repeatElement("a", count: length))
                    scalars.replaceSubrange(
                        scalars.index(
                            scalars.startIndex, offsetBy: position)..<scalars.index(
                                scalars.startIndex, offsetBy: position + 1), with: [special])
                    let string = String(scalars)
                    var writer = JSONWriter(capacity: 1)
                    writer.string(string)
                    let written = String(decoding: writer.finish(), as: UTF8.self)
                    if written != Self.reference(string) { wrong.append(string) }
                }
            }
        }
        #expect(wrong.isEmpty, "\(wrong.prefix(3))")
    }

    @Test func cleanStringsOfEveryLengthAreCopiedWhole() {
        for length in 0..<40 {
            let string = String(repeating: "x", count: length)
            #expect(JSONValue.string(string).jsonString == "\"\(string)\"")
        }
    }
}

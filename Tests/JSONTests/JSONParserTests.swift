import JSON
import Testing

/// Parses UTF-8 text with the default limits.
private func parse(_ text: String, maxDepth: Int = JSONParser.defaultMaxDepth) throws(JSONParseError) -> JSONValue {
    try JSONParser.parse(Array(text.utf8), maxDepth: maxDepth)
}

@Suite struct JSONParserTests {
    struct Valid: Sendable, CustomTestStringConvertible {
        let name: String, text: String, value: JSONValue
        var testDescription: String { name }
    }

    static let valid: [Valid] = [
        Valid(name: "null", text: "null", value: nil),
        Valid(name: "true", text: "true", value: true),
        Valid(name: "false", text: " false ", value: false),
        Valid(name: "zero", text: "0", value: .number("0")),
        Valid(name: "negative zero", text: "-0", value: .number("-0")),
        Valid(name: "fraction and exponent", text: "-12.5e+3", value: .number("-12.5e+3")),
        Valid(name: "capital exponent", text: "1E-7", value: .number("1E-7")),
        Valid(name: "zero fraction", text: "0.000", value: .number("0.000")),
        Valid(
            name: "big integer kept verbatim", text: "123456789012345678901234567890",
            value: .number("123456789012345678901234567890")),
        Valid(name: "empty string", text: #""""#, value: ""),
        Valid(name: "simple escapes", text: #""\"\\\/\b\f\n\r\t""#, value: "\"\\/\u{08}\u{0C}\n\r\t"),
        Valid(name: "unicode escape", text: #""\u00e9\u4E2D""#, value: "é中"),
        Valid(name: "escaped NUL", text: #""a\u0000b""#, value: "a\u{0}b"),
        Valid(name: "surrogate pair", text: #""\ud83d\ude00""#, value: "😀"),
        Valid(name: "raw UTF-8", text: "\"héllo 中文 😀\"", value: "héllo 中文 😀"),
        Valid(name: "raw U+2028", text: "\"a\u{2028}b\"", value: "a\u{2028}b"),
        Valid(name: "empty array", text: "[]", value: []),
        Valid(name: "empty object", text: "{}", value: [:]),
        Valid(name: "whitespace everywhere", text: " \t\r\n[ 1 , { \"a\" : [ ] } ]\n", value: [1, ["a": []]]),
        Valid(name: "nested", text: #"{"a":[1,{"b":null}],"c":"d"}"#, value: ["a": [1, ["b": nil]], "c": "d"]),
        Valid(name: "same key in sibling objects", text: #"[{"a":1},{"a":2}]"#, value: [["a": 1], ["a": 2]]),
        Valid(name: "same key at two depths", text: #"{"a":{"a":1}}"#, value: ["a": ["a": 1]]),
        Valid(name: "keys differing only in case", text: #"{"a":1,"A":2}"#, value: ["a": 1, "A": 2]),
        Valid(
            name: "depth exactly 32", text: String(repeating: "[", count: 32) + String(repeating: "]", count: 32),
            value: (0..<31).reduce(JSONValue.array([])) { inner, _ in [inner] }),
    ]

    @Test(arguments: valid) func accepts(_ test: Valid) throws {
        #expect(try parse(test.text) == test.value)
    }

    struct Invalid: Sendable, CustomTestStringConvertible {
        let name: String, bytes: [UInt8], offset: Int
        init(_ name: String, _ text: String, offset: Int) {
            self.name = name
            self.bytes = Array(text.utf8)
            self.offset = offset
        }
        init(_ name: String, bytes: [UInt8], offset: Int) {
            self.name = name
            self.bytes = bytes
            self.offset = offset
        }
        var testDescription: String { name }
    }

    static let invalid: [Invalid] = [
        Invalid("empty", "", offset: 0),
        Invalid("only whitespace", "  ", offset: 2),
        Invalid("two values", "1 2", offset: 2),
        Invalid("trailing garbage", "{}x", offset: 2),
        Invalid("trailing comma in array", "[1,]", offset: 3),
        Invalid("trailing comma in object", #"{"a":1,}"#, offset: 7),
        Invalid("missing comma", "[1 2]", offset: 3),
        Invalid("unclosed array", "[1", offset: 2),
        Invalid("unclosed object", #"{"a":1"#, offset: 6),
        Invalid("missing colon", #"{"a" 1}"#, offset: 5),
        Invalid("unquoted key", "{a:1}", offset: 1),
        Invalid("single quotes", "['a']", offset: 1),
        Invalid("line comment", "[1] // c", offset: 4),
        Invalid("block comment", "/* c */ 1", offset: 0),
        Invalid("leading zero", "01", offset: 1),
        Invalid("negative leading zero", "-01", offset: 2),
        Invalid("plus sign", "+1", offset: 0),
        Invalid("lone minus", "-", offset: 1),
        Invalid("dot without digits", "1.", offset: 2),
        Invalid("leading dot", ".5", offset: 0),
        Invalid("empty exponent", "1e", offset: 2),
        Invalid("signed empty exponent", "1e+", offset: 3),
        Invalid("NaN", "NaN", offset: 0),
        Invalid("Infinity", "-Infinity", offset: 1),
        Invalid("hex number", "0x10", offset: 1),
        Invalid("truncated true", "tru", offset: 3),
        Invalid("wrong literal", "nul1", offset: 3),
        Invalid("capital literal", "True", offset: 0),
        Invalid("unterminated string", #""abc"#, offset: 4),
        Invalid("raw newline in string", "\"a\nb\"", offset: 2),
        Invalid("raw tab in string", "\"a\tb\"", offset: 2),
        Invalid("invalid escape", #""\x""#, offset: 1),
        Invalid("short unicode escape", #""\u12""#, offset: 5),
        Invalid("bad hex in unicode escape", #""\u12G4""#, offset: 5),
        Invalid("lone high surrogate", #""\ud83d""#, offset: 1),
        Invalid("high surrogate then letter", #""\ud83dx""#, offset: 1),
        Invalid("high surrogate then non-surrogate", #""\ud83d\u0041""#, offset: 1),
        Invalid("lone low surrogate", #""\ude00""#, offset: 1),
        Invalid("BOM", bytes: [0xEF, 0xBB, 0xBF] + Array("{}".utf8), offset: 0),
        Invalid("invalid UTF-8 lead byte", bytes: [0x22, 0xFF, 0x22], offset: 1),
        Invalid("lone continuation byte", bytes: [0x22, 0x80, 0x22], offset: 1),
        Invalid("overlong slash", bytes: [0x22, 0xC0, 0xAF, 0x22], offset: 1),
        Invalid("overlong 3-byte", bytes: [0x22, 0xE0, 0x80, 0xAF, 0x22], offset: 1),
        Invalid("UTF-8 encoded surrogate", bytes: [0x22, 0xED, 0xA0, 0x80, 0x22], offset: 1),
        Invalid("above U+10FFFF", bytes: [0x22, 0xF4, 0x90, 0x80, 0x80, 0x22], offset: 1),
        Invalid("truncated sequence", bytes: [0x22, 0xE4, 0xB8, 0x22], offset: 1),
        Invalid("invalid UTF-8 outside string", bytes: [0xC3, 0xA9], offset: 0),
        Invalid("NUL byte", bytes: [0x5B, 0x00, 0x5D], offset: 1),
        // One body, one reading (API.md §2): a repeated member name is refused at its second key.
        Invalid("duplicate key", #"{"a":1,"b":2,"a":3}"#, offset: 13),
        Invalid("duplicate key, same value", #"{"a":1,"a":1}"#, offset: 7),
        Invalid("duplicate key in a nested object", #"{"x":[{"k":true,"k":false}]}"#, offset: 16),
        Invalid("duplicate key spelled with an escape", #"{"id":1,"\u0069d":2}"#, offset: 8),
        Invalid(
            "duplicate key past the hash index",
            "{" + (0..<20).map { "\"k\($0)\":0" }.joined(separator: ",") + #","k3":1}"#, offset: 151),
        Invalid("depth 33", String(repeating: "[", count: 33) + String(repeating: "]", count: 33), offset: 32),
        Invalid(
            "object depth 33", String(repeating: #"{"a":"#, count: 33) + "1" + String(repeating: "}", count: 33),
            offset: 160),
    ]

    @Test(arguments: invalid) func refuses(_ test: Invalid) {
        #expect {
            _ = try JSONParser.parse(test.bytes)
        } throws: { error in
            (error as? JSONParseError)?.offset == test.offset
        }
    }

    @Test func deepNestingIsRefusedWithoutRecursion() {
        // 100 000 '[' would overflow a recursive parser's stack; the limit stops it at byte 32.
        let deep = [UInt8](repeating: UInt8(ascii: "["), count: 100_000)
        #expect(throws: JSONParseError(offset: 32, reason: "nesting deeper than 32 levels")) {
            try JSONParser.parse(deep)
        }
        // An absurd limit is lowered to the ceiling, since values are destroyed recursively.
        let balanced = deep + [UInt8](repeating: UInt8(ascii: "]"), count: 100_000)
        #expect(throws: JSONParseError.self) { try JSONParser.parse(balanced, maxDepth: 200_000) }
    }

    @Test func maximumDepthValuesAreUsable() throws {
        let depth = JSONParser.maximumDepth
        let text = String(repeating: "[", count: depth) + String(repeating: "]", count: depth)
        let value = try JSONParser.parse(text, maxDepth: depth)
        #expect(value.jsonString == text)
        #expect(value == (try JSONParser.parse(text, maxDepth: .max)))
    }

    @Test func messagesNameTheCharacterAndOffset() {
        #expect(throws: JSONParseError.self) { try parse("[1, x]") }
        do {
            _ = try parse("[1, x]")
        } catch {
            #expect(error.offset == 4)
            #expect(error.message == "unexpected character 'x', expected a value at byte 4")
        }
        do {
            _ = try parse("[1")
        } catch {
            #expect(error.message == "unexpected end of input, expected ',' or ']' at byte 2")
        }
    }

    @Test func duplicateKeyMessageNamesTheKey() {
        #expect(throws: JSONParseError(offset: 7, reason: #"duplicate member name "a""#)) {
            try parse(#"{"a":1,"a":2}"#)
        }
    }

    @Test func rawBufferAndStringEntryPoints() throws {
        let bytes = Array(#"  {"k": [true]}  "#.utf8)
        let viaBuffer = try bytes.withUnsafeBytes { buffer in try JSONParser.parse(buffer) }
        #expect(viaBuffer == ["k": [true]])
        #expect(try JSONParser.parse(#"{"k": [true]}"#) == viaBuffer)
    }
}

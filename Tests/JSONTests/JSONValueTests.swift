import JSON
import Testing

@Suite struct JSONValueTests {
    @Test func literals() {
        let value: JSONValue = ["s": "x", "i": 42, "d": 1.5, "b": true, "n": nil, "a": [1, "two"]]
        let object = value.objectValue!
        #expect(object.keys == ["s", "i", "d", "b", "n", "a"])
        #expect(object["s"] == .string("x"))
        #expect(object["i"] == .number("42"))
        #expect(object["d"] == .number("1.5"))
        #expect(object["b"] == .bool(true))
        #expect(object["n"] == .null)
        #expect(object["a"] == .array([.number("1"), .string("two")]))
    }

    @Test func accessors() {
        #expect(JSONValue.string("x").stringValue == "x")
        #expect(JSONValue.number("1").stringValue == nil)
        #expect(JSONValue.bool(false).boolValue == false)
        #expect(JSONValue.null.isNull)
        #expect(!JSONValue.bool(false).isNull)
        #expect(JSONValue.number("9223372036854775807").intValue == Int64.max)
        #expect(JSONValue.number("-9223372036854775808").intValue == Int64.min)
        #expect(JSONValue.number("9223372036854775808").intValue == nil)
        #expect(JSONValue.number("-0").intValue == 0)
        #expect(JSONValue.number("1.0").intValue == nil)
        #expect(JSONValue.number("1e3").intValue == nil)
        #expect(JSONValue.number("1e3").doubleValue == 1000)
        #expect(JSONValue.number("-2.5").doubleValue == -2.5)
        #expect(JSONValue.string("1").doubleValue == nil)
        #expect(JSONValue.array([1]).arrayValue == [1])
        #expect(JSONValue.object(["a": 1]).objectValue == ["a": 1])
        #expect(JSONValue.object(["a": 1])["a"] == 1)
        #expect(JSONValue(Int64(-7)) == .number("-7"))
        #expect(JSONValue(0.1) == .number("0.1"))
    }

    @Test func objectBehavesLikeAnOrderedMap() {
        var object: JSONObject = ["b": 1, "a": 2]
        object["c"] = 3
        object["b"] = 4
        #expect(object.keys == ["b", "a", "c"])
        #expect(object.count == 3)
        #expect(object.removeValue(forKey: "a") == 2)
        #expect(object.removeValue(forKey: "zzz") == nil)
        #expect(object.map(\.key) == ["b", "c"])
        object["b"] = nil
        #expect(object.keys == ["c"])
        object["n"] = .null
        #expect(object["n"] == .null)
        #expect(JSONObject([("x", 1), ("x", 2)]) == ["x": 2])
    }

    @Test func largeObjectsStayConsistent() {
        // Past the index threshold lookups go through a dictionary; it must track removals.
        var object = JSONObject()
        for i in 0..<100 { object["k\(i)"] = JSONValue(i) }
        for i in stride(from: 0, to: 100, by: 3) { object.removeValue(forKey: "k\(i)") }
        object["k50"] = "replaced"
        #expect(object.count == 66)
        for i in 0..<100 {
            // Optional.none, not the nil literal: JSONValue is itself ExpressibleByNilLiteral.
            let expected: JSONValue? = i % 3 == 0 ? .none : (i == 50 ? "replaced" : JSONValue(i))
            #expect(object["k\(i)"] == expected)
        }
        #expect(object.keys.first == "k1")
    }

    /// A literal is appended as written (no lookups); past the index threshold it must still
    /// answer lookups, replacements and new keys through the index.
    @Test func largeLiteralsAnswerThroughTheirIndex() {
        var object: JSONObject = [
            "a": 1, "b": 2, "c": 3, "d": 4, "e": 5, "f": 6, "g": 7, "h": 8, "i": 9, "j": 10,
            "k": 11, "l": 12, "m": 13, "n": 14, "o": 15, "p": 16, "q": 17, "r": 18,
        ]
        #expect(object.count == 18)
        #expect(object["r"] == 18)
        #expect(object["a"] == 1)
        object["q"] = "replaced"
        object["s"] = 19
        #expect(object.count == 19)
        #expect(object["q"] == "replaced")
        #expect(object.keys.suffix(3) == ["q", "r", "s"])
        #expect(JSONValue.object(["z": 1, "y": [2, 3]]).jsonString == #"{"z":1,"y":[2,3]}"#)
    }

    @Test func equalityIgnoresMemberOrder() {
        let a: JSONValue = ["x": 1, "y": [true]]
        let b: JSONValue = ["y": [true], "x": 1]
        #expect(a == b)
        #expect(a.hashValue == b.hashValue)
        #expect(Set([a, b]).count == 1)
        #expect(a != ["x": 1, "y": [false]])
        #expect(a != ["x": 1])
    }
}

@Suite struct JSONSerializationTests {
    @Test func compactOutput() {
        let value: JSONValue = ["b": [1, true, nil], "a": "x", "e": [:], "f": []]
        #expect(value.jsonString == #"{"b":[1,true,null],"a":"x","e":{},"f":[]}"#)
        #expect(value.description == value.jsonString)
    }

    @Test func escapes() {
        let value: JSONValue = .string("q\" b\\ n\n t\t r\r \u{08}\u{0C} \u{01}\u{1F} / é \u{2028} 😀")
        #expect(value.jsonString == #""q\" b\\ n\n t\t r\r \b\f \u0001\u001f / é "# + "\u{2028} 😀\"")
        let key: JSONValue = ["k\"": 1]
        #expect(key.jsonString == #"{"k\"":1}"#)
    }

    @Test(arguments: [
        "null", "true", "[]", "{}", "-0", "1.5E-300", "123456789012345678901234567890",
        #"{"a":[1,{"b":null}],"c":"d\n\u0000é😀"}"#,
        #"[" ",[],[[]],{"":{}}]"#,
    ])
    func roundTrip(_ text: String) throws {
        let value = try JSONParser.parse(text)
        let serialized = value.jsonBytes
        #expect(try JSONParser.parse(serialized) == value)
        #expect(value.serializedByteCount == serialized.count)
    }

    @Test func bigNumbersArePreserved() throws {
        let text = #"{"id":18446744073709551617,"x":-0.10000000000000000000001}"#
        #expect(try JSONParser.parse(text).jsonString == text)
    }

    @Test func serializedByteCountMatches() {
        let value: JSONValue = ["key\u{1}": ["é", 12.25, nil, false, ["\"\\": "\u{7}"]]]
        #expect(value.serializedByteCount == value.jsonBytes.count)
        var appended = JSONWriter(capacity: 1)
        appended.literal("x")
        appended.value(value)
        #expect(appended.byteCount == 1 + value.serializedByteCount)
    }
}

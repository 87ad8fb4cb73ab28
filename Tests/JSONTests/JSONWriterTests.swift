import JSON
import Testing

/// The writer grows its own memory; what it hands over must be exactly what was written, however
/// small it started and however the text was put together.
@Suite struct JSONWriterTests {
    @Test func growsPastItsFirstCapacityWithoutLosingBytes() {
        var writer = JSONWriter(capacity: 1)
        var expected = ""
        for index in 0..<200 {
            writer.literal(",ab")
            writer.append(UInt8(ascii: "c"))
            writer.string("s\(index)\n")
            expected += ",abc\"s\(index)\\n\""
        }
        #expect(writer.byteCount == expected.utf8.count)
        #expect(String(decoding: writer.finish(), as: UTF8.self) == expected)
    }

    @Test(arguments: [Int64.min, -1_000, -1, 0, 7, 10, 99, 100, 1_234_567_890, Int64.max])
    func integersAsSwiftPrintsThem(_ value: Int64) {
        var writer = JSONWriter(capacity: 1)
        writer.literal("[")
        writer.integer(value)
        writer.literal("]")
        #expect(String(decoding: writer.finish(), as: UTF8.self) == "[\(value)]")
    }

    @Test func dropLastReopensAnObject() {
        var writer = JSONWriter(capacity: 8)
        writer.value(["a": 1])
        writer.dropLast(1)
        writer.literal(",")
        writer.key("b")
        writer.bool(true)
        writer.literal("}")
        #expect(String(decoding: writer.finish(), as: UTF8.self) == #"{"a":1,"b":true}"#)
    }

    @Test func writeUpToKeepsOnlyWhatWasWritten() {
        var writer = JSONWriter(capacity: 2)
        writer.literal("ab")
        writer.write(upTo: 10) { room in
            room[0] = UInt8(ascii: "c")
            return 1
        }
        writer.literal("d")
        #expect(String(decoding: writer.finish(), as: UTF8.self) == "abcd")
    }

    @Test func valueIsWhatJSONBytesHolds() {
        let value: JSONValue = ["k\"": ["é", 12.25, nil, false, ["\u{7}": []]], "n": "x"]
        var writer = JSONWriter(capacity: 4)
        writer.value(value)
        let bytes = value.jsonBytes
        #expect(writer.finish() == bytes)
        #expect(String(decoding: bytes, as: UTF8.self) == #"{"k\"":["é",12.25,null,false,{"\u0007":[]}],"n":"x"}"#)
    }
}

import JSON
import Testing

@testable import Identity

/// The `$subscriber.merged` event's properties are written as bytes; they must be the very JSON
/// the object `{from, shape, eventsMoved}` serializes to, for any anonymous id a store holds.
struct MergeMarkerTests {
    @Test(arguments: [
        "anon_V1StGXR8_Z5jdHi6B-myT", "", #"quote " and \ backslash"#, "tab\tnew\nline\u{1}", "émoji 🙂 ü",
    ])
    func propertiesAreTheObjectsSerialization(_ from: String) throws {
        for (shape, moved) in [(MergeShape.rename, 0), (.absorb, 10_000), (.link, 0)] {
            let result = MergeResult(shape: shape, from: from, eventsMoved: moved)
            let expected = JSONValue.object([
                "from": .string(from), "shape": .string(shape.rawValue), "eventsMoved": .number(String(moved)),
            ]).jsonString
            #expect(result.markerPropertiesJSON == expected)
            let parsed = try JSONParser.parse(Array(result.markerPropertiesJSON.utf8), maxDepth: 4)
            #expect(parsed.objectValue?["from"]?.stringValue == from)
        }
    }
}

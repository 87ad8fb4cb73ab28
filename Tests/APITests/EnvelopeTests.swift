import API
import HTTP1
import HTTPServer
import Identity
import JSON
import Testing

/// The envelope's pre-encoded success path must write exactly what the general path writes.
@Suite struct EnvelopeTests {
    @Test(arguments: [
        JSONValue.object(["status": "ok"]),
        .object(["subscriber": ["id": "user_42", "aliases": ["anon_x"], "n": 1.5, "none": nil]]),
        .array([]), .null, .string("quote \" and \\ and \u{1}"),
    ])
    func fastPathMatchesTheTree(_ data: JSONValue) throws {
        let requestID = "req_\"odd\""
        let fast = Envelope.success(data, requestID: requestID)
        // A warning forces the general path; without it, the bytes must be the same object.
        let general = Envelope.success(
            data, requestID: requestID, warnings: [IdentityWarning(code: .attributeProtected, message: "m")])
        let fastObject = try #require(try JSONParser.parse(fast.body).objectValue)
        var generalObject = try #require(try JSONParser.parse(general.body).objectValue)
        var metadata = try #require(generalObject["metadata"]?.objectValue)
        metadata["warnings"] = nil
        generalObject["metadata"] = .object(metadata)
        #expect(fastObject == generalObject)
        #expect(JSONValue.object(fastObject).jsonString == String(decoding: fast.body, as: UTF8.self))
        #expect(fast.headers["X-Request-Id"] == requestID)
    }
}

import API
import HTTP1
import HTTPServer
import Identity
import JSON
import Testing

/// The envelope's shortcuts (data spliced in as bytes, the request id written as it is) must
/// write exactly what the general path writes.
@Suite struct EnvelopeTests {
    static let data: [JSONValue] = [
        .object(["status": "ok"]),
        .object(["subscriber": ["id": "user_42", "aliases": ["anon_x"], "n": 1.5, "none": nil]]),
        .array([]), .null, .string("quote \" and \\ and \u{1}"),
    ]

    @Test(arguments: data)
    func shortcutsMatchTheTree(_ data: JSONValue) throws {
        // The longest id `Application` echoes, and every printable byte it lets through.
        let requestID = String(repeating: "!#$%&'()*+,-./09:;<=>?@AZ[]^_`az{|}~", count: 4).prefix(128)
        let written = Envelope.success(data, requestID: String(requestID))
        let spliced = Envelope.success(data, serializedData: data.jsonBytes, requestID: String(requestID))
        // A warning forces the general path; without it, the bytes must be the same object.
        let general = Envelope.success(
            data, requestID: String(requestID), warnings: [IdentityWarning(code: .attributeProtected, message: "m")])
        var generalObject = try #require(try JSONParser.parse(general.body).objectValue)
        var metadata = try #require(generalObject["metadata"]?.objectValue)
        metadata["warnings"] = nil
        generalObject["metadata"] = .object(metadata)
        #expect(metadata["requestId"] == .string(String(requestID)))
        let expected = JSONValue.object(generalObject).jsonString
        #expect(String(decoding: written.body, as: UTF8.self) == expected)
        #expect(String(decoding: spliced.body, as: UTF8.self) == expected)
        #expect(written.headers["X-Request-Id"] == String(requestID))
        #expect(spliced.headers["X-Request-Id"] == String(requestID))
        #expect(spliced.headers["Content-Type"] == "application/json; charset=utf-8")
    }

    @Test func onlyPrintableASCIIWithoutQuoteOrBackslashIsClean() {
        #expect(Envelope.isClean(requestID: "req_abc-123"))
        for unclean in ["a\"b", "a\\b", "a b", "a\u{7F}", "é", "a\u{0}"] {
            #expect(!Envelope.isClean(requestID: unclean), "\(unclean)")
        }
    }
}

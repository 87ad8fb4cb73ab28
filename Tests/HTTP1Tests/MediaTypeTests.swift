import HTTP1
import Testing

/// `Content-Type` values a JSON body is taken with (RFC 9110 §8.3.1: type and subtype are
/// case-insensitive, parameters follow `;`).
@Suite struct MediaTypeTests {
    @Test(arguments: [
        "application/json", "APPLICATION/JSON", "Application/Json; charset=utf-8", " application/json ",
        "\tapplication/json;", "application/json ; charset=\"x\"", "application/vnd.api+json",
        "application/merge-patch+JSON", "+json",
    ])
    func takesJSON(_ value: String) {
        #expect(isJSONMediaType(value))
    }

    @Test(arguments: [
        "", ";", "text/plain", "application/jsonx", "xapplication/json", "application/json5", "application/js",
        "application/x-json-stream", "application/json\u{A0}", "application\u{0F}json", "application/vnd.api+jsonp",
        "json", "application/ json",
    ])
    func refusesEverythingElse(_ value: String) {
        #expect(!isJSONMediaType(value))
    }
}

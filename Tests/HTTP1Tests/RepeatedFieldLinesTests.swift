import Testing

@testable import HTTP1

/// A connection's heads parsed with `RepeatedFieldLines` answer exactly what each parses to
/// alone, and share the fields only where the field lines are the same bytes.
@Suite struct RepeatedFieldLinesTests {
    static let limits = HTTPParserLimits()

    static func parse(_ text: String, _ last: inout RepeatedFieldLines) -> HTTPRequestHead? {
        let bytes = Array(text.utf8)
        let result = bytes.withUnsafeBytes {
            parseRequestHead($0, limits: limits, resumingFrom: .start, repeating: &last)
        }
        guard case .complete(let head, _) = result else { return nil }
        return head
    }

    static func alone(_ text: String) -> HTTPRequestHead? {
        var fresh = RepeatedFieldLines()
        return parse(text, &fresh)
    }

    /// Where a head's fields are stored: equal for two heads sharing one array.
    static func storage(_ head: HTTPRequestHead) -> UnsafeRawPointer? {
        head.headers.fields.withUnsafeBufferPointer { UnsafeRawPointer($0.baseAddress) }
    }

    static func head(_ target: String, _ lines: String) -> String { "GET \(target) HTTP/1.1\r\n\(lines)\r\n" }

    static let a = "Host: example.com\r\nAuthorization: Bearer sk_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\n"
    /// `a` with the key's last byte changed: the same length.
    static let b = "Host: example.com\r\nAuthorization: Bearer sk_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaab\r\n"
    static let c = "Host: example.com\r\nX-Request-Id: r1\r\n"
    static let long = "Host: example.com\r\nX-Padding: \(String(repeating: "p", count: 1100))\r\n"

    @Test func eachHeadIsWhatItParsesToAlone() throws {
        var last = RepeatedFieldLines()
        let sequence = [
            Self.head("/v1/subscribers/u1", Self.a), Self.head("/v1/subscribers/u2", Self.a),
            Self.head("/v1/subscribers/u2", Self.b), Self.head("/healthz", Self.a), Self.head("/healthz", Self.c),
            Self.head("/healthz", Self.long), Self.head("/healthz", Self.long), Self.head("/healthz", ""),
            Self.head("/healthz", ""), Self.head("/healthz", Self.a),
        ]
        for text in sequence {
            let head = try #require(Self.parse(text, &last))
            #expect(head == Self.alone(text), "\(text)")
        }
    }

    @Test func theSameLinesShareTheirFieldsAndOthersDoNot() throws {
        var last = RepeatedFieldLines()
        let first = try #require(Self.parse(Self.head("/v1/subscribers/u1", Self.a), &last))
        let repeated = try #require(Self.parse(Self.head("/v1/subscribers/u2", Self.a), &last))
        #expect(Self.storage(first) == Self.storage(repeated))
        #expect(repeated.target == "/v1/subscribers/u2")

        let changed = try #require(Self.parse(Self.head("/v1/subscribers/u2", Self.b), &last))
        #expect(Self.storage(changed) != Self.storage(first))
        #expect(changed.headers["Authorization"] == "Bearer sk_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaab")
        let back = try #require(Self.parse(Self.head("/v1/subscribers/u2", Self.a), &last))
        #expect(back.headers["Authorization"] == "Bearer sk_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa")

        // Lines over the bound are not kept: the next head with them makes its own.
        let long1 = try #require(Self.parse(Self.head("/", Self.long), &last))
        let long2 = try #require(Self.parse(Self.head("/", Self.long), &last))
        #expect(Self.storage(long1) != Self.storage(long2))
        #expect(long1 == long2)
    }

    /// A head that arrived in pieces (resumed) still checks and keeps its lines.
    @Test func aResumedHeadUsesTheLinesToo() throws {
        var last = RepeatedFieldLines()
        let first = try #require(Self.parse(Self.head("/a", Self.a), &last))
        let bytes = Array(Self.head("/b", Self.a).utf8)
        let cut = 30
        let partial = bytes[..<cut].withUnsafeBytes {
            parseRequestHead($0, limits: Self.limits, resumingFrom: .start, repeating: &last)
        }
        guard case .needMore(let point) = partial else {
            Issue.record("expected needMore, got \(partial)")
            return
        }
        let whole = bytes.withUnsafeBytes {
            parseRequestHead($0, limits: Self.limits, resumingFrom: point, repeating: &last)
        }
        guard case .complete(let head, let consumed) = whole else {
            Issue.record("expected a head, got \(whole)")
            return
        }
        #expect(consumed == bytes.count)
        #expect(head == Self.alone(Self.head("/b", Self.a)))
        #expect(Self.storage(head) == Self.storage(first))
    }
}

// The one response serializer, and the field-list semantics it and the connection rely on.

import HTTP1
import Testing

@Suite("Response serializer")
struct ResponseSerializerTests {
    static let date = "Sun, 06 Nov 1994 08:49:37 GMT"
    static let keepAlive11 = HTTPResponseFraming(requestVersion: .http1_1, isHead: false, closing: false, gzip: false)

    private func serialize(
        _ status: HTTPStatus, _ headers: HTTPHeaders = [:], _ body: String = "",
        framing: HTTPResponseFraming = keepAlive11
    ) -> String {
        var out: [UInt8] = Array("prefix|".utf8)
        serializeResponse(
            status: status, headers: headers, body: Array(body.utf8), framing: framing, date: Self.date, into: &out)
        return String(decoding: out, as: UTF8.self)
    }

    @Test("length, date, body; nothing about the connection on 1.1 keep-alive")
    func plain() {
        #expect(
            serialize(.ok, [:], "hi") == "prefix|HTTP/1.1 200 OK\r\nContent-Length: 2\r\nDate: \(Self.date)\r\n\r\nhi")
    }

    @Test("framing fields of the response are replaced by ours, its Date is kept")
    func framingFieldsAreOurs() {
        let headers: HTTPHeaders = [
            "Content-Length": "99", "Transfer-Encoding": "chunked", "Connection": "keep-alive", "Date": "x",
            "X-A": "1",
        ]
        #expect(
            serialize(.ok, headers, "abc")
                == "prefix|HTTP/1.1 200 OK\r\nDate: x\r\nX-A: 1\r\nContent-Length: 3\r\n\r\nabc")
    }

    @Test("HEAD: the GET length, no body")
    func head() {
        var framing = Self.keepAlive11
        framing.isHead = true
        #expect(
            serialize(.ok, [:], "12345", framing: framing)
                == "prefix|HTTP/1.1 200 OK\r\nContent-Length: 5\r\nDate: \(Self.date)\r\n\r\n")
    }

    @Test("204 and 1xx carry no length and no body; 304 no length")
    func bodyless() {
        #expect(serialize(.noContent, [:], "x") == "prefix|HTTP/1.1 204 No Content\r\nDate: \(Self.date)\r\n\r\n")
        #expect(!serialize(HTTPStatus(304)).contains("Content-Length"))
    }

    @Test("closing says close; a 1.0 client kept alive is told keep-alive")
    func connection() {
        var closing = Self.keepAlive11
        closing.closing = true
        #expect(serialize(.ok, framing: closing).hasSuffix("Connection: close\r\n\r\n"))
        var old = Self.keepAlive11
        old.requestVersion = .http1_0
        #expect(serialize(.ok, framing: old).hasSuffix("Connection: keep-alive\r\n\r\n"))
        #expect(
            serialize(.ok, framing: .refusal).hasSuffix(
                "Content-Length: 0\r\nDate: \(Self.date)\r\nConnection: close\r\n\r\n"))
    }

    @Test("gzip adds Content-Encoding and Vary once")
    func gzip() {
        var framing = Self.keepAlive11
        framing.gzip = true
        #expect(
            serialize(.ok, [:], "zz", framing: framing)
                == "prefix|HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nVary: Accept-Encoding\r\nContent-Length: 2\r\nDate: \(Self.date)\r\n\r\nzz"
        )
        #expect(
            serialize(.ok, ["Vary": "Origin, accept-encoding"], "zz", framing: framing)
                == "prefix|HTTP/1.1 200 OK\r\nVary: Origin, accept-encoding\r\nContent-Encoding: gzip\r\nContent-Length: 2\r\nDate: \(Self.date)\r\n\r\nzz"
        )
    }

    @Test("every status the parser and the server produce has its reason phrase")
    func reasonPhrases() {
        let lines: [(HTTPStatus, String)] = [
            (.badRequest, "400 Bad Request"), (.requestTimeout, "408 Request Timeout"),
            (.payloadTooLarge, "413 Content Too Large"), (.uriTooLong, "414 URI Too Long"),
            (.unsupportedMediaType, "415 Unsupported Media Type"),
            (.headersTooLarge, "431 Request Header Fields Too Large"), (.notImplemented, "501 Not Implemented"),
            (.serviceUnavailable, "503 Service Unavailable"),
            (.httpVersionNotSupported, "505 HTTP Version Not Supported"),
        ]
        for (status, line) in lines {
            #expect(serialize(status).hasPrefix("prefix|HTTP/1.1 \(line)\r\n"))
        }
    }

    @Test("CR, LF and NUL in a name or value cannot split the response")
    func noSplitting() {
        #expect(
            serialize(.ok, ["X-Echo": "a\r\nSet-Cookie: x=1", "X\nY": "b\u{0}c"])
                .hasPrefix("prefix|HTTP/1.1 200 OK\r\nX-Echo: a  Set-Cookie: x=1\r\nX Y: b c\r\n"))
    }

    @Test("a clean field is written as made; changed, it is sanitised again")
    func cleanFields() {
        let clean = HTTPField(cleanName: "X-Request-Id", value: "req_abc")
        #expect(clean.isClean)
        #expect(clean == HTTPField(name: "X-Request-Id", value: "req_abc"))
        #expect(
            serialize(.ok, HTTPHeaders(fields: [clean]))
                == "prefix|HTTP/1.1 200 OK\r\nX-Request-Id: req_abc\r\nContent-Length: 0\r\nDate: \(Self.date)\r\n\r\n")

        var changed = clean
        changed.value = "a\r\nSet-Cookie: x=1"
        #expect(!changed.isClean)
        var renamed = clean
        renamed.name = "Content-Length"
        #expect(!renamed.isClean)
        #expect(
            serialize(.ok, HTTPHeaders(fields: [changed, renamed]))
                == "prefix|HTTP/1.1 200 OK\r\nX-Request-Id: a  Set-Cookie: x=1\r\nContent-Length: 0\r\n"
                + "Date: \(Self.date)\r\n\r\n")
    }

    @Test("the interim 100 response")
    func interim() {
        #expect(String(decoding: continueResponseBytes, as: UTF8.self) == "HTTP/1.1 100 Continue\r\n\r\n")
    }
}

@Suite("Field lists")
struct FieldListTests {
    @Test(
        "Accept-Encoding weights",
        arguments: [
            ("gzip", true), ("br, gzip;q=0.5", true), ("gzip;q=0", false), ("gzip; q=0.000", false),
            ("GZIP;Q=1", true), ("gzip;q=1.000", true), ("gzip;q=0.001", true), ("gzip;q=1.5", false),
            ("gzip;q=2", false), ("gzip;q=0.0001", false), ("gzip;q=", false), ("gzip;level=1", true),
            ("x-gzip", true), ("*", true), ("*;q=0", false), ("identity", false), ("", false),
            ("gzip;q=0, *", false), ("*, gzip;q=0", false), ("br , gzip", true), ("gzipx", false),
        ])
    func acceptsGzip(_ value: String, _ expected: Bool) {
        #expect(HTTPHeaders([("Accept-Encoding", value)]).acceptsGzip == expected)
    }

    @Test("the best gzip weight over several fields counts")
    func acceptsGzipAcrossFields() {
        #expect(HTTPHeaders([("Accept-Encoding", "gzip;q=0"), ("accept-encoding", "x-gzip")]).acceptsGzip)
        #expect(!HTTPHeaders().acceptsGzip)
    }

    @Test(
        "Content-Encoding of a request body",
        arguments: [
            ("gzip", HTTPContentCoding.gzip), ("x-gzip", .gzip), ("identity", .identity), ("identity, gzip", .gzip),
            ("GZip", .gzip), ("", .identity), ("br", .unsupported), ("gzip, gzip", .unsupported),
            ("gzip, br", .unsupported), (" , ", .identity),
        ])
    func contentCoding(_ value: String, _ expected: HTTPContentCoding) {
        #expect(HTTPHeaders([("Content-Encoding", value)]).contentCoding == expected)
    }

    @Test("tokens in lists, case-insensitively, in any field of the name")
    func tokens() {
        let headers = HTTPHeaders([("Connection", "Keep-Alive, Upgrade"), ("connection", " CLOSE ")])
        #expect(headers.containsToken("close", inField: "Connection"))
        #expect(headers.containsToken("upgrade", inField: "CONNECTION"))
        #expect(!headers.containsToken("keep", inField: "Connection"))
        #expect(!headers.containsToken("close", inField: "Expect"))
        #expect(HTTPHeaders.list("a,,b", containsToken: "b"))
        #expect(!HTTPHeaders.list("", containsToken: "b"))
    }

    @Test("keep-alive by version and Connection (RFC 9112 §9.3)")
    func keepAlive() {
        func head(_ version: HTTPVersion, _ connection: String?) -> HTTPRequestHead {
            HTTPRequestHead(
                method: .GET, target: "/", version: version,
                headers: HTTPHeaders(connection.map { [("Connection", $0)] } ?? []))
        }
        #expect(head(.http1_1, nil).keepAlive)
        #expect(!head(.http1_1, "close").keepAlive)
        #expect(!head(.http1_0, nil).keepAlive)
        #expect(head(.http1_0, "keep-alive").keepAlive)
        #expect(!head(.http1_0, "keep-alive, close").keepAlive)
    }
}

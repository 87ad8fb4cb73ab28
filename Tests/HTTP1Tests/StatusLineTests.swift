import HTTP1
import Testing

@Suite struct StatusLineTests {
    @Test(arguments: [
        ("HTTP/1.1 200 OK\r\n", 200, 1, 17),
        ("HTTP/1.0 404 Not Found\r\nServer: x\r\n\r\n", 404, 0, 24),
        ("HTTP/1.1 204\r\n", 204, 1, 14),
        ("HTTP/1.1 500 \r\n", 500, 1, 15),
        ("HTTP/1.1 410 Gone\tfor good, caf\u{E9}\r\n", 410, 1, 35),
    ])
    func complete(line: String, code: Int, minor: Int, consumed: Int) {
        #expect(
            StatusLine.parse(Array(line.utf8))
                == .complete(code: code, version: HTTPVersion(major: 1, minor: minor), consumed: consumed))
    }

    @Test func everyTruncationNeedsMore() {
        let line = Array("HTTP/1.1 201 Created\r\n".utf8)
        for end in 0..<line.count {
            #expect(StatusLine.parse(line[..<end]) == .needMore, "prefix of \(end) bytes")
        }
    }

    @Test(arguments: [
        ("SSH-2.0-OpenSSH\r\n", "not an HTTP response"),
        ("http/1.1 200 OK\r\n", "not an HTTP response"),
        ("HTTP/2 200\r\n", "bad version dot"),
        ("HTTP/2.0 200 OK\r\n", "not HTTP/1.x"),
        ("HTTP/1.1  200 OK\r\n", "bad status code"),
        ("HTTP/1.1 20 OK\r\n", "bad status code"),
        ("HTTP/1.1 099 Low\r\n", "status code below 100"),
        ("HTTP/1.1 2000 OK\r\n", "bad byte after status code"),
        ("HTTP/1.1 200 OK\n", "control byte in reason phrase"),
        ("HTTP/1.1 200 O\u{0}K\r\n", "control byte in reason phrase"),
        ("HTTP/1.1 200 OK\rX", "CR not followed by LF"),
    ])
    func invalid(line: String, reason: String) {
        #expect(StatusLine.parse(Array(line.utf8)) == .invalid(reason))
    }

    @Test func aReasonPhraseWithoutEndIsRefusedOnceTooLong() {
        let line = Array(("HTTP/1.1 200 " + String(repeating: "x", count: StatusLine.maxLength)).utf8)
        #expect(StatusLine.parse(line) == .invalid("status line too long"))
    }

    @Test func fieldSyntax() {
        #expect(HTTPFieldSyntax.isValidName("webhook-signature"))
        #expect(
            !HTTPFieldSyntax.isValidName("bad name") && !HTTPFieldSyntax.isValidName("")
                && !HTTPFieldSyntax.isValidName("a:b"))
        #expect(HTTPFieldSyntax.isValidValue("v1,abc= v1,def=") && HTTPFieldSyntax.isValidValue(""))
        #expect(!HTTPFieldSyntax.isValidValue("a\r\nInjected: 1") && !HTTPFieldSyntax.isValidValue(" padded"))
        #expect(!HTTPFieldSyntax.isValidValue("nul\u{0}") && !HTTPFieldSyntax.isValidValue("tab\t"))
    }
}

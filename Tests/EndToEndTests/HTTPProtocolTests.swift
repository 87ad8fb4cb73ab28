import Foundation
import TestSupport
import XCTest

/// HTTP/1.x behaviour of the real `buzzkit` binary over raw sockets (API.md §2, §10).
final class HTTPProtocolTests: XCTestCase {
    private var server: TestServer!

    override func setUpWithError() throws {
        server = try TestServer.start()
    }

    override func tearDown() {
        server?.stop()
        server = nil
    }

    private func client() throws -> HTTPClient { try HTTPClient(port: server.port, timeoutSeconds: 5) }

    // MARK: - Basic routes and the envelope

    func testHealthAndReadinessUseTheEnvelope() throws {
        let c = try client()
        for (path, status) in [("/healthz", "ok"), ("/readyz", "ready")] {
            let response = try c.send("GET", path)
            XCTAssertEqual(response.status, 200)
            XCTAssertEqual(response.json?["success"] as? Bool, true)
            XCTAssertTrue(response.json?["error"] is NSNull)
            XCTAssertEqual(response.data?["status"] as? String, status)
            let requestID = (response.json?["metadata"] as? [String: Any])?["requestId"] as? String
            XCTAssertTrue(requestID?.hasPrefix("req_") ?? false, "minted request id: \(String(describing: requestID))")
            XCTAssertEqual(response.header("X-Request-Id"), requestID)
        }
    }

    func testRequestIDIsEchoedOrMinted() throws {
        let c = try client()
        // An id that could not be echoed safely (quote, backslash) is replaced by a minted one.
        let unsafe = try c.send("GET", "/healthz", headers: ["X-Request-Id": "a\"b\\c"])
        XCTAssertTrue(
            unsafe.header("X-Request-Id")?.hasPrefix("req_") ?? false, String(describing: unsafe.header("X-Request-Id"))
        )
        let echoed = try c.send("GET", "/healthz", headers: ["X-Request-Id": "trace-abc-123"])
        XCTAssertEqual(echoed.header("X-Request-Id"), "trace-abc-123")
        XCTAssertEqual((echoed.json?["metadata"] as? [String: Any])?["requestId"] as? String, "trace-abc-123")
        // Also on errors.
        let notFound = try c.send("GET", "/nope", headers: ["X-Request-Id": "trace-404"])
        XCTAssertEqual(notFound.header("X-Request-Id"), "trace-404")
        assertErrorEnvelope(notFound, 404, "not_found")
        // Two minted ids differ.
        let a = try c.send("GET", "/healthz").header("X-Request-Id")
        let b = try c.send("GET", "/healthz").header("X-Request-Id")
        XCTAssertTrue(a?.hasPrefix("req_") ?? false)
        XCTAssertNotEqual(a, b)
    }

    func testUnknownRouteAndWrongMethod() throws {
        let c = try client()
        assertErrorEnvelope(try c.send("GET", "/v1/does-not-exist"), 404, "not_found")
        assertErrorEnvelope(try c.send("GET", "/"), 404, "not_found")
        let wrong = try c.send("DELETE", "/healthz")
        assertErrorEnvelope(wrong, 405, "method_not_allowed")
        XCTAssertTrue(
            wrong.header("Allow")?.contains("GET") ?? false, "Allow: \(String(describing: wrong.header("Allow")))")
        let wrongV1 = try c.send("DELETE", "/v1/events")
        assertErrorEnvelope(wrongV1, 405, "method_not_allowed")
        XCTAssertTrue(wrongV1.header("Allow")?.contains("POST") ?? false)
        // Errors on a keep-alive connection do not close it.
        XCTAssertEqual(try c.send("GET", "/healthz").status, 200)
    }

    func testInvalidJSONAndUnsupportedMediaType() throws {
        let tenant = try server.createTenant()
        let c = try client()
        var headers = tenant.app
        headers["Content-Type"] = "application/json"
        assertErrorEnvelope(
            try c.send("POST", "/v1/events", body: Array("{\"subscriberId\": ".utf8), headers: headers), 400,
            "invalid_json")
        assertErrorEnvelope(
            try c.send("POST", "/v1/events", body: Array("[1,2]".utf8), headers: headers), 400, "invalid_json")
        // One body, one reading (API.md §2): a repeated member name, at the top or nested, is not JSON we read.
        let repeated = #"{"events":[{"name":"a","name":"b"}]}"#
        let duplicate = try c.send("POST", "/v1/events", body: Array(repeated.utf8), headers: headers)
        assertErrorEnvelope(duplicate, 400, "invalid_json")
        XCTAssertTrue(duplicate.text.contains("duplicate member name"), duplicate.text)
        assertErrorEnvelope(
            try c.send("POST", "/v1/events", body: Array(#"{"events":[],"events":[]}"#.utf8), headers: headers), 400,
            "invalid_json")
        headers["Content-Type"] = "text/plain"
        assertErrorEnvelope(
            try c.send("POST", "/v1/events", body: Array("{}".utf8), headers: headers), 415, "unsupported_media_type")
        // Still usable: these are application errors, the framing was fine.
        XCTAssertEqual(try c.send("GET", "/healthz").status, 200)
        // An unknown content coding is refused before the body is read, and the connection closes.
        headers["Content-Type"] = "application/json"
        headers["Content-Encoding"] = "br"
        let coded = try c.send("POST", "/v1/events", body: Array("{}".utf8), headers: headers)
        assertErrorEnvelope(coded, 415, "unsupported_media_type")
        assertClosed(coded, c)
    }

    // MARK: - Connection handling

    func testKeepAliveServesManyRequestsOnOneConnection() throws {
        let tenant = try server.createTenant()
        let c = try client()
        let subscriber = newAnonymousID()
        for i in 0..<10 {
            XCTAssertEqual(try c.send("GET", "/healthz").status, 200)
            let write = try c.send(
                "POST", "/v1/events", json: eventBatch(subscriberId: subscriber, count: 1, prefix: "k\(i)-"),
                headers: tenant.app)
            XCTAssertEqual(write.status, 200, write.text)
            XCTAssertNil(write.header("Connection"), "HTTP/1.1 keep-alive needs no Connection header")
        }
        let timeline = try c.send("GET", "/v1/subscribers/\(subscriber)/events", headers: tenant.backend)
        XCTAssertEqual((timeline.data?["events"] as? [Any])?.count, 10)
        // The client asks to close: the server answers and closes.
        let last = try c.send("GET", "/healthz", headers: ["Connection": "close"])
        XCTAssertEqual(last.status, 200)
        assertClosed(last, c)
    }

    func testPipelinedRequestsAreAnsweredInOrder() throws {
        let tenant = try server.createTenant()
        let subscriber = newAnonymousID()
        let body = jsonBytes(eventBatch(subscriberId: subscriber, count: 3))
        var bytes = Array("GET /healthz HTTP/1.1\r\nHost: x\r\nX-Request-Id: p1\r\n\r\n".utf8)
        bytes +=
            Array(
                "POST /v1/events HTTP/1.1\r\nHost: x\r\nX-Request-Id: p2\r\nAuthorization: Bearer \(tenant.clientKey)\r\nContent-Type: application/json\r\nContent-Length: \(body.count)\r\n\r\n"
                    .utf8) + body
        bytes += Array(
            "GET /v1/subscribers/\(subscriber)/events HTTP/1.1\r\nHost: x\r\nX-Request-Id: p3\r\nAuthorization: Bearer \(tenant.secretKey)\r\n\r\n"
                .utf8)
        bytes += Array("GET /nope HTTP/1.1\r\nHost: x\r\nX-Request-Id: p4\r\n\r\n".utf8)
        bytes += Array("GET /readyz HTTP/1.1\r\nHost: x\r\nX-Request-Id: p5\r\n\r\n".utf8)
        let c = try client()
        try c.write(bytes)
        let responses = try (0..<5).map { _ in try c.readResponse() }
        XCTAssertEqual(responses.map(\.status), [200, 200, 200, 404, 200])
        XCTAssertEqual(responses.map { $0.header("X-Request-Id") ?? "" }, ["p1", "p2", "p3", "p4", "p5"])
        XCTAssertEqual(responses[1].data?["accepted"] as? Int, 3)
        // The read after the write sees it: answered strictly in order.
        XCTAssertEqual((responses[2].data?["events"] as? [Any])?.count, 3)
        XCTAssertEqual(responses[4].data?["status"] as? String, "ready")
    }

    func testLongPipelineIsAnsweredInOrder() throws {
        let c = try client()
        let count = 300
        var bytes: [UInt8] = []
        for i in 0..<count {
            let path = ["/healthz", "/readyz", "/nope", "/openapi.json"][i % 4]
            bytes += Array(
                "\(i % 7 == 6 ? "HEAD" : "GET") \(path) HTTP/1.1\r\nHost: x\r\nX-Request-Id: pipe-\(i)\r\n\r\n".utf8)
        }
        try c.write(bytes)
        for i in 0..<count {
            let response = try c.readResponse(method: i % 7 == 6 ? "HEAD" : "GET")
            XCTAssertEqual(response.header("X-Request-Id"), "pipe-\(i)")
            XCTAssertEqual(response.status, i % 4 == 2 ? 404 : 200, "request \(i)")
        }
        XCTAssertEqual(try c.send("GET", "/healthz").status, 200)
    }

    func testPipelineWithMalformedRequestAnswersEarlierOnesThenCloses() throws {
        let c = try client()
        try c.write(
            "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\nGET /healthz HTTP/1.1\r\nHost: x\r\n\r\nBROKEN\r\n\r\nGET /healthz HTTP/1.1\r\n\r\n"
        )
        XCTAssertEqual(try c.readResponse().status, 200)
        XCTAssertEqual(try c.readResponse().status, 200)
        let bad = try c.readResponse()
        assertErrorEnvelope(bad, 400, "invalid_request")
        assertClosed(bad, c)
    }

    func testChunkedRequestBody() throws {
        let tenant = try server.createTenant()
        let subscriber = newAnonymousID()
        let body = jsonBytes(eventBatch(subscriberId: subscriber, count: 5))
        let c = try client()
        var bytes = Array(
            "POST /v1/events HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer \(tenant.clientKey)\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
                .utf8)
        // Uneven chunks, one with an extension, hex sizes in both cases, then a trailer.
        var offset = 0
        var sizes = [1, 16, 200, 7]
        while offset < body.count {
            let size = min(sizes.isEmpty ? 0x1F : sizes.removeFirst(), body.count - offset)
            let ext = offset == 0 ? ";name=value" : ""
            bytes +=
                Array("\(String(size, radix: 16, uppercase: offset % 2 == 0))\(ext)\r\n".utf8)
                + body[offset..<offset + size] + Array("\r\n".utf8)
            offset += size
        }
        bytes += Array("0\r\nX-Trailer: yes\r\n\r\n".utf8)
        try c.write(bytes)
        let response = try c.readResponse()
        XCTAssertEqual(response.status, 200, response.text)
        XCTAssertEqual(response.data?["accepted"] as? Int, 5)
        // Same body sent chunk by chunk in separate writes, on the same connection: all duplicates.
        try c.write(Array(bytes[..<40]))
        usleep(50_000)
        try c.write(Array(bytes[40...]))
        let again = try c.readResponse()
        XCTAssertEqual(again.status, 200)
        XCTAssertEqual(again.data?["duplicates"] as? Int, 5)
    }

    func testExpectContinueSendsInterimThenFinal() throws {
        let tenant = try server.createTenant()
        let body = jsonBytes(eventBatch(subscriberId: newAnonymousID(), count: 2))
        let c = try client()
        try c.write(
            "POST /v1/events HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer \(tenant.clientKey)\r\nContent-Type: application/json\r\nExpect: 100-continue\r\nContent-Length: \(body.count)\r\n\r\n"
        )
        let interim = try c.readResponse()
        XCTAssertEqual(interim.status, 100)
        try c.write(body)
        let final = try c.readResponse()
        XCTAssertEqual(final.status, 200, final.text)
        XCTAssertEqual(final.data?["accepted"] as? Int, 2)
        // Over the body limit: refused at once instead of 100, and closed.
        try c.write(
            "POST /v1/events HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: \(10 << 20)\r\n\r\n")
        let refused = try c.readResponse()
        assertErrorEnvelope(refused, 413, "payload_too_large")
        assertClosed(refused, c)
    }

    func testHeadHasNoBodyButContentLength() throws {
        let c = try client()
        let get = try c.send("GET", "/healthz")
        try c.write("HEAD /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        let head = try c.readResponse(method: "HEAD")
        XCTAssertEqual(head.status, 200)
        XCTAssertTrue(head.body.isEmpty)
        XCTAssertNotNil(head.header("Content-Length"))
        // Same length as GET (request ids have the same length too).
        XCTAssertEqual(head.header("Content-Length"), get.header("Content-Length"))
        // No stray body bytes: the next response on this connection parses cleanly.
        let next = try c.send("GET", "/healthz", headers: ["X-Request-Id": "after-head"])
        XCTAssertEqual(next.status, 200)
        XCTAssertEqual(next.header("X-Request-Id"), "after-head")
    }

    func testHTTP10ClosesUnlessKeepAliveIsAsked() throws {
        let c = try client()
        try c.write("GET /healthz HTTP/1.0\r\n\r\n")
        let plain = try c.readResponse()
        XCTAssertEqual(plain.status, 200)
        XCTAssertEqual(plain.data?["status"] as? String, "ok")
        assertClosed(plain, c)

        let k = try client()
        try k.write("GET /healthz HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
        let kept = try k.readResponse()
        XCTAssertEqual(kept.status, 200)
        XCTAssertEqual(kept.header("Connection")?.lowercased(), "keep-alive")
        try k.write("GET /readyz HTTP/1.0\r\n\r\n")
        let second = try k.readResponse()
        XCTAssertEqual(second.status, 200)
        assertClosed(second, k)
    }

    func testGzipRequestBodyAndGzipResponse() throws {
        let tenant = try server.createTenant()
        let subscriber = newAnonymousID()
        let c = try client()
        let compressed = try gzip(jsonBytes(eventBatch(subscriberId: subscriber, count: 50)))
        var headers = tenant.app
        headers["Content-Type"] = "application/json"
        headers["Content-Encoding"] = "gzip"
        let ingest = try c.send("POST", "/v1/events", body: compressed, headers: headers)
        XCTAssertEqual(ingest.status, 200, ingest.text)
        XCTAssertEqual(ingest.data?["accepted"] as? Int, 50)

        // A large enveloped answer (the 50-event timeline), gzip asked: compressed (the client
        // decodes it through /bin/gzip); not asked, or q=0: identity.
        let path = "/v1/subscribers/\(subscriber)/events?limit=50"
        let raw = try c.send("GET", path, headers: tenant.backend)
        XCTAssertEqual(raw.status, 200)
        XCTAssertGreaterThan(raw.body.count, 2048)
        XCTAssertNil(raw.header("Content-Encoding"), "not compressed unless asked")
        let zipped = try c.send(
            "GET", path, headers: tenant.backend.merging(["Accept-Encoding": "br;q=1, gzip;q=0.8"]) { a, _ in a })
        XCTAssertEqual(zipped.status, 200)
        XCTAssertEqual(zipped.header("Content-Encoding"), "gzip")
        XCTAssertTrue(zipped.header("Vary")?.lowercased().contains("accept-encoding") ?? false)
        XCTAssertLessThan(Int(zipped.header("Content-Length") ?? "") ?? .max, raw.body.count / 2)
        XCTAssertEqual((zipped.data?["events"] as? [Any])?.count, 50)
        XCTAssertEqual(
            (zipped.data?["events"] as? [[String: Any]])?.map { $0["id"] as? String },
            (raw.data?["events"] as? [[String: Any]])?.map { $0["id"] as? String })
        let refused = try c.send(
            "GET", path, headers: tenant.backend.merging(["Accept-Encoding": "gzip;q=0"]) { a, _ in a })
        XCTAssertNil(refused.header("Content-Encoding"))
        // Small answers are not worth compressing; /openapi.json keeps its own format either way.
        XCTAssertNil(try c.send("GET", "/healthz", headers: ["Accept-Encoding": "gzip"]).header("Content-Encoding"))
        let openAPI = try c.send("GET", "/openapi.json", headers: ["Accept-Encoding": "gzip"])
        XCTAssertEqual(openAPI.status, 200)
        XCTAssertNotNil(openAPI.json?["openapi"])
        // A body that claims gzip but is not: 400, closed.
        headers["Content-Encoding"] = "gzip"
        let corrupt = try c.send("POST", "/v1/events", body: Array("{\"not\": \"gzip\"}".utf8), headers: headers)
        assertErrorEnvelope(corrupt, 400, "invalid_request")
        assertClosed(corrupt, c)
    }

    // MARK: - Requests that could be read two ways

    /// Each of these must get a 400 (or the listed status) envelope with `Connection: close`, and be closed.
    func testAmbiguousOrMalformedRequestsAreRefusedAndClosed() throws {
        let cases: [(String, String, Int, String)] = [
            (
                "CL+TE",
                "POST /v1/events HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
                400, "invalid_request"
            ),
            (
                "differing CL",
                "POST /v1/events HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello!", 400,
                "invalid_request"
            ),
            ("bad CL", "POST /v1/events HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\n", 400, "invalid_request"),
            ("obs-fold", "GET /healthz HTTP/1.1\r\nHost: x\r\nX-A: b\r\n  folded\r\n\r\n", 400, "invalid_request"),
            ("bare LF", "GET /healthz HTTP/1.1\nHost: x\n\n", 400, "invalid_request"),
            ("bare CR", "GET /healthz HTTP/1.1\rHost: x\r\n\r\n", 400, "invalid_request"),
            (
                "bad chunk size",
                "POST /v1/events HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nhello\r\n0\r\n\r\n",
                400, "invalid_request"
            ),
            (
                "chunk size overflow",
                "POST /v1/events HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nFFFFFFFFFFFFFFFFFF\r\n", 400,
                "invalid_request"
            ),
            (
                "chunk without CRLF",
                "POST /v1/events HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nabc\r\n0\r\n\r\n", 400,
                "invalid_request"
            ),
            ("space before colon", "GET /healthz HTTP/1.1\r\nHost : x\r\n\r\n", 400, "invalid_request"),
            ("garbage request line", "HELLO\r\n\r\n", 400, "invalid_request"),
            ("NUL in header", "GET /healthz HTTP/1.1\r\nHost: x\r\nX-A: a\u{0}b\r\n\r\n", 400, "invalid_request"),
            (
                "chunked not final", "POST /v1/events HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\n\r\n", 400,
                "invalid_request"
            ),
            (
                "unknown transfer coding",
                "POST /v1/events HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: x-custom, chunked\r\n\r\n", 501,
                "not_implemented"
            ),
            ("missing Host", "GET /healthz HTTP/1.1\r\n\r\n", 400, "invalid_request"),
            ("two Host fields", "GET /healthz HTTP/1.1\r\nHost: x\r\nHost: y\r\n\r\n", 400, "invalid_request"),
            ("Host with a slash", "GET /healthz HTTP/1.1\r\nHost: local/host\r\n\r\n", 400, "invalid_request"),
            ("Host with a space", "GET /healthz HTTP/1.1\r\nHost: local host\r\n\r\n", 400, "invalid_request"),
            ("Host with an empty port", "GET /healthz HTTP/1.1\r\nHost: example.com:\r\n\r\n", 400, "invalid_request"),
            ("Host IPv6 unclosed", "GET /healthz HTTP/1.1\r\nHost: [::1:8080\r\n\r\n", 400, "invalid_request"),
            ("HTTP/2.0", "GET /healthz HTTP/2.0\r\nHost: x\r\n\r\n", 505, "http_version_not_supported"),
        ]
        for (name, request, status, code) in cases {
            let c = try client()
            try c.write(request)
            let response = try c.readResponse()
            XCTAssertEqual(response.status, status, name)
            assertErrorEnvelope(response, status, code)
            assertClosed(response, c)
            XCTAssertTrue(response.header("X-Request-Id")?.hasPrefix("req_") ?? false, name)
        }
        // The server is unharmed.
        XCTAssertEqual(try client().send("GET", "/healthz").status, 200)
    }

    /// RFC 9112 §3.2: the Host refusals say so (not some other 400), and valid forms are served.
    func testHostIsCheckedAndValidFormsAreServed() throws {
        for value in ["local/host", "a b", "example.com:", "x:99999"] {
            let c = try client()
            try c.write("GET /healthz HTTP/1.1\r\nHost: \(value)\r\n\r\n")
            let refused = try c.readResponse()
            assertErrorEnvelope(refused, 400, "invalid_request")
            XCTAssertTrue(refused.text.contains("Host"), "\(value): \(refused.text)")
            assertClosed(refused, c)
        }
        let c = try client()
        for value in ["localhost", "127.0.0.1:8080", "[::1]:8080", "api.example.com", ""] {
            try c.write("GET /healthz HTTP/1.1\r\nHost: \(value)\r\n\r\n")
            XCTAssertEqual(try c.readResponse().status, 200, "Host: \(value)")
        }
        // HTTP/1.0 needs no Host.
        let old = try client()
        try old.write("GET /healthz HTTP/1.0\r\n\r\n")
        XCTAssertEqual(try old.readResponse().status, 200)
    }

    /// API.md §10: a chunk whose size line alone is over the body limit (1 MiB here) is refused at
    /// once, like an over-limit Content-Length, not after the 10 s header timeout.
    func testDeclaredChunkOverTheLimitIs413AtOnce() throws {
        let c = try HTTPClient(port: server.port, timeoutSeconds: 2)
        try c.write(
            "POST /v1/events HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
        )
        let started = Date()
        try c.write("40000000\r\n")
        let refused = try c.readResponse()
        let waited = Date().timeIntervalSince(started)
        assertErrorEnvelope(refused, 413, "payload_too_large")
        assertClosed(refused, c)
        XCTAssertLessThan(waited, 1, "the 413 must not wait for the announced bytes")
    }
}

import Foundation
import TestSupport
import XCTest

/// The configured limits of the real binary, set small so they are cheap to hit (API.md §10).
final class HTTPProtocolLimitsTests: XCTestCase {
    private var server: TestServer!

    override func setUpWithError() throws {
        server = try TestServer.start(config: [
            "maxBodyBytes": 2048, "maxTargetBytes": 256, "maxHeaderBytes": 1024, "maxHeaderCount": 16,
            "headerTimeoutSeconds": 1, "idleTimeoutSeconds": 1,
        ])
    }

    override func tearDown() {
        server?.stop()
        server = nil
    }

    private func client() throws -> HTTPClient { try HTTPClient(port: server.port, timeoutSeconds: 5) }

    func testBodyOverTheLimitIs413() throws {
        // Announced length over the limit: refused before the body is sent.
        let c = try client()
        try c.write(
            "POST /v1/events HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 4096\r\n\r\n")
        let announced = try c.readResponse()
        assertErrorEnvelope(announced, 413, "payload_too_large")
        assertClosed(announced, c)

        // Chunked, growing past the limit.
        let chunked = try client()
        let chunk = String(repeating: "a", count: 1000)
        try chunked.write(
            "POST /v1/events HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
                + String(repeating: "3e8\r\n\(chunk)\r\n", count: 3) + "0\r\n\r\n")
        let grown = try chunked.readResponse()
        assertErrorEnvelope(grown, 413, "payload_too_large")
        assertClosed(grown, chunked)

        // A small gzip body that inflates past the limit (measured after decoding).
        let bomb = try client()
        let tenant = try server.createTenant()
        var headers = tenant.app
        headers["Content-Type"] = "application/json"
        headers["Content-Encoding"] = "gzip"
        let compressed = try gzip([UInt8](repeating: 0x20, count: 200_000))
        XCTAssertLessThan(compressed.count, 2048)
        let inflated = try bomb.send("POST", "/v1/events", body: compressed, headers: headers)
        assertErrorEnvelope(inflated, 413, "payload_too_large")
        assertClosed(inflated, bomb)

        // Right at the limit is fine (the body is then judged by the application).
        let ok = try client()
        var body = Array("{\"subscriberId\":\"\(newAnonymousID())\",\"events\":[]}".utf8)
        body += [UInt8](repeating: 0x20, count: 2048 - body.count)
        let atLimit = try ok.send(
            "POST", "/v1/events", body: body,
            headers: tenant.app.merging(["Content-Type": "application/json"]) { a, _ in a })
        XCTAssertNotEqual(atLimit.status, 413)
        XCTAssertEqual(try ok.send("GET", "/healthz").status, 200)
    }

    func testLongTargetIs414() throws {
        let c = try client()
        let response = try c.send("GET", "/v1/subscribers/" + String(repeating: "a", count: 400))
        assertErrorEnvelope(response, 414, "uri_too_long")
        assertClosed(response, c)
        // Under the limit still routes.
        XCTAssertEqual(try client().send("GET", "/healthz?" + String(repeating: "a", count: 200)).status, 200)
    }

    func testTooManyOrTooLargeHeadersIs431() throws {
        let many = try client()
        var headers: [String: String] = [:]
        for i in 0..<30 { headers["X-Header-\(i)"] = "v" }
        let tooMany = try many.send("GET", "/healthz", headers: headers)
        assertErrorEnvelope(tooMany, 431, "headers_too_large")
        assertClosed(tooMany, many)

        let large = try client()
        let tooLarge = try large.send("GET", "/healthz", headers: ["X-Big": String(repeating: "b", count: 2000)])
        assertErrorEnvelope(tooLarge, 431, "headers_too_large")
        assertClosed(tooLarge, large)

        // A header section that never ends is cut off at the limit, not buffered forever.
        let endless = try client()
        try endless.write("GET /healthz HTTP/1.1\r\nHost: x\r\n" + String(repeating: "X-A: aaaaaaaaaa\r\n", count: 200))
        let cut = try endless.readResponse()
        assertErrorEnvelope(cut, 431, "headers_too_large")
        assertClosed(cut, endless)
    }

    func testStalledRequestGets408AndIsClosed() throws {
        let stalledHead = try client()
        try stalledHead.write("GET /healthz HTTP/1.1\r\nHost: x\r\n")
        let started = Date()
        let timeout = try stalledHead.readResponse()
        let waited = Date().timeIntervalSince(started)
        assertErrorEnvelope(timeout, 408, "request_timeout")
        assertClosed(timeout, stalledHead)
        XCTAssertGreaterThan(waited, 0.5)
        XCTAssertLessThan(waited, 3.5)

        // A body that stops half way: 408 as well.
        let stalledBody = try client()
        try stalledBody.write("POST /v1/events HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{\"sub")
        let bodyTimeout = try stalledBody.readResponse()
        assertErrorEnvelope(bodyTimeout, 408, "request_timeout")
        assertClosed(bodyTimeout, stalledBody)

        // A connection that never sends a byte is closed silently (nothing to answer).
        let silent = try client()
        XCTAssertTrue(silent.isClosedByPeer())
    }

    func testIdleKeepAliveConnectionIsClosedSilently() throws {
        let c = try client()
        XCTAssertEqual(try c.send("GET", "/healthz").status, 200)
        let started = Date()
        XCTAssertTrue(c.isClosedByPeer(), "idle connection not closed")
        let waited = Date().timeIntervalSince(started)
        XCTAssertGreaterThan(waited, 0.5)
        XCTAssertLessThan(waited, 3.5)
        // A busy connection is not cut: requests 0.5 s apart keep it alive past the idle timeout.
        let busy = try client()
        for _ in 0..<4 {
            XCTAssertEqual(try busy.send("GET", "/healthz").status, 200)
            usleep(500_000)
        }
    }
}

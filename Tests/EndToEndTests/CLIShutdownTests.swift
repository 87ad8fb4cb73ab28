import Foundation
import Glibc
import TestSupport
import XCTest

/// SIGTERM: stop accepting, finish what is in flight, exit 0, close the database cleanly (API.md §10).
final class CLIShutdownTests: XCTestCase {
    func testSIGTERMFinishesTheRequestInFlightAndExitsCleanly() throws {
        let server = try TestServer.start()
        defer { server.kill() }
        let tenant = try server.createTenant()
        let subscriber = newAnonymousID()
        let body = jsonBytes(eventBatch(subscriberId: subscriber, count: 500))
        XCTAssertGreaterThan(body.count, 20_000)

        // An idle keep-alive connection, and one whose 500-event batch is half sent.
        let idle = try HTTPClient(port: server.port, timeoutSeconds: 5)
        XCTAssertEqual(try idle.send("GET", "/healthz").status, 200)
        let inFlight = try HTTPClient(port: server.port, timeoutSeconds: 10)
        try inFlight.write(
            "POST /v1/events HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer \(tenant.clientKey)\r\nContent-Type: application/json\r\nContent-Length: \(body.count)\r\n\r\n"
        )
        try inFlight.write(Array(body[..<(body.count / 2)]))
        usleep(200_000)

        kill(server.process.processIdentifier, SIGTERM)
        // Stops accepting: new connections are refused once the listener is closed.
        XCTAssertTrue(eventually(5) { tryConnect(server.port) == nil }, "still accepting after SIGTERM")
        // The idle connection is closed, not kept waiting.
        XCTAssertTrue(idle.isClosedByPeer())
        XCTAssertTrue(server.process.isRunning, "must wait for the request in flight")

        // The rest of the body arrives: the request completes with 2xx and the connection closes.
        try inFlight.write(Array(body[(body.count / 2)...]))
        let response = try inFlight.readResponse()
        XCTAssertEqual(response.status, 200, response.text)
        XCTAssertEqual(response.data?["accepted"] as? Int, 500)
        XCTAssertEqual(response.header("Connection")?.lowercased(), "close")
        XCTAssertTrue(inFlight.isClosedByPeer())

        let deadline = Date().addingTimeInterval(10)
        while server.process.isRunning && Date() < deadline { usleep(20_000) }
        XCTAssertFalse(server.process.isRunning, "did not exit after draining")
        XCTAssertEqual(server.process.terminationReason, .exit)
        XCTAssertEqual(server.process.terminationStatus, 0)
        XCTAssertTrue(server.logs.contains("\"stopped\""), server.logs.suffix(1000).description)

        // Closed cleanly: the WAL was checkpointed and removed, the data is there and intact.
        XCTAssertFalse(
            FileManager.default.fileExists(atPath: server.databasePath + "-wal"), "WAL left behind: not closed cleanly")
        XCTAssertEqual(try sqlite(server.databasePath, "PRAGMA integrity_check"), "ok")
        XCTAssertEqual(try sqlite(server.databasePath, "SELECT count(*) FROM events"), "500")
        XCTAssertEqual(
            try sqlite(server.databasePath, "SELECT event_count FROM subscribers WHERE id = '\(subscriber)'"), "500")
    }
}

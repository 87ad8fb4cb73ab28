import API
import Dispatch
import Foundation
import HTTP1
import HTTPServer
import Identity
import Storage
import Synchronization
import TestSupport
import Testing

/// API.md §13's `409 idempotency_key_in_progress`: while the first request with a key waits for
/// the writer, a retry is told to come back, and afterwards gets the first answer.
@Suite struct IdempotencyInFlightTests {
    @Test func aRetryWhileTheFirstRunsIs409WithRetryAfter() throws {
        let app = try InProcessApp()
        defer { app.close() }
        let tenant = try app.createTenant()
        var headers = tenant.backend
        headers["Idempotency-Key"] = "in-flight-1"
        headers["Content-Type"] = "application/json"

        // Hold the writer so the first request's write job queues behind this one.
        let gate = DispatchSemaphore(value: 0)
        let holding = DispatchSemaphore(value: 0)
        app.store.write({ _ in
            holding.signal()
            gate.wait()
        }) { _ in }
        holding.wait()

        let firstDone = DispatchSemaphore(value: 0)
        let first = ResponseSlot()
        var fields = HTTPHeaders()
        fields.add(name: "Host", value: "localhost")
        for (name, value) in headers.sorted(by: { $0.key < $1.key }) { fields.add(name: name, value: value) }
        let head = HTTPRequestHead(
            method: .PUT, target: "/v1/subscribers/racer", version: .http1_1, headers: fields)
        app.application.respond(to: HTTPRequest(head: head, body: Array("{}".utf8))) { response in
            first.set(response)
            firstDone.signal()
        }

        let retry = app.send("PUT", "/v1/subscribers/racer", body: Array("{}".utf8), headers: headers)
        #expect(retry.status == 409)
        #expect(retry.errorCode == "idempotency_key_in_progress")
        #expect(retry.header("Retry-After") == "1")
        gate.signal()
        firstDone.wait()
        let answered = try #require(first.get())
        #expect(answered.status.code == 201)
        let replay = app.send("PUT", "/v1/subscribers/racer", body: Array("{}".utf8), headers: headers)
        #expect(replay.status == 201 && replay.body == answered.body)
        #expect(replay.header("Idempotent-Replayed") == "true")
    }

    @Test func recordsAreKeptAndGoneOnlyAfterTheirRetention() throws {
        let app = try InProcessApp()
        defer { app.close() }
        let record = IdempotencyRecord(
            scope: "k/t", key: "old", method: "PUT", path: "/v1/x", bodySHA256: [1, 2], status: 201,
            contentType: "application/json", response: Array("{}".utf8), createdAt: Timestamp(millis: 1_000))
        try app.store.writeAndWait { ctx in try ctx.insertIdempotencyRecord(record) }
        let kept = try app.store.writeAndWait { ctx in
            try ctx.purgeIdempotencyRecords(createdBefore: Timestamp(millis: 1_000), limit: 10)
        }
        #expect(kept == 0)
        #expect(try app.store.read { try $0.idempotencyRecord(scope: "k/t", key: "old") } == record)
        let purged = try app.store.writeAndWait { ctx in
            try ctx.purgeIdempotencyRecords(createdBefore: Timestamp(millis: 1_001), limit: 10)
        }
        #expect(purged == 1)
        #expect(try app.store.read { try $0.idempotencyRecord(scope: "k/t", key: "old") } == nil)
    }
}

/// A response handed over from the completion thread.
private final class ResponseSlot: @unchecked Sendable {
    private let lock = NSLock()
    private var response: HTTPResponse?
    func set(_ value: HTTPResponse) { lock.withLock { response = value } }
    func get() -> HTTPResponse? { lock.withLock { response } }
}

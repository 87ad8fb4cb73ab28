import HTTP1
import Testing

@testable import HTTPServer

/// Drives `ConnectionStateMachine` with bytes and a manual clock; no sockets.
@Suite struct StateMachineTests {
    typealias Machine = ConnectionStateMachine
    static let second: UInt64 = 1_000_000_000
    static let date = "Sun, 06 Nov 1994 08:49:37 GMT"

    private func limits() -> Machine.Limits {
        var limits = Machine.Limits()
        limits.maxBodyBytes = 100
        limits.headerTimeout = 10 * Self.second
        limits.idleTimeout = 60 * Self.second
        return limits
    }

    private func feed(_ machine: inout Machine, _ text: String, now: UInt64) -> Machine.Action {
        Array(text.utf8).withUnsafeBytes { machine.bytesRead($0, now: now) }
    }

    private func delivered(_ action: Machine.Action) -> HTTPRequest? {
        if case .deliver(let request) = action { return request }
        return nil
    }

    private func written(_ action: Machine.Action) -> String? {
        if case .write(let bytes) = action { return String(decoding: bytes, as: UTF8.self) }
        return nil
    }

    @Test func simpleRequestResponseThenIdle() throws {
        var machine = Machine(limits: limits(), now: 0)
        #expect(machine.deadline == 10 * Self.second)
        let request = try #require(delivered(feed(&machine, "GET /a HTTP/1.1\r\nHost: x\r\n\r\n", now: 1)))
        #expect(request.head.target == "/a")
        #expect(!machine.wantsRead)
        #expect(machine.deadline == nil)
        let out = try #require(
            written(machine.responseReady(HTTPResponse(status: .ok, body: Array("hi".utf8)), date: Self.date, now: 2)))
        #expect(out == "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nDate: \(Self.date)\r\n\r\nhi")
        guard case .none = machine.writeCompleted(now: 3) else {
            Issue.record("expected idle")
            return
        }
        #expect(machine.isIdle)
        #expect(machine.wantsRead)
        #expect(machine.deadline == 3 + 60 * Self.second)
    }

    @Test func pipelinedRequestsAreTakenOneAtATime() throws {
        var machine = Machine(limits: limits(), now: 0)
        let first = try #require(
            delivered(feed(&machine, "GET /1 HTTP/1.1\r\nHost: x\r\n\r\nGET /2 HTTP/1.1\r\nHost: x\r\n\r\n", now: 0)))
        #expect(first.head.target == "/1")
        // More bytes while the app answers are buffered, not parsed.
        guard case .none = feed(&machine, "GET /3 HTTP/1.1\r\nHost: x\r\n\r\n", now: 0) else {
            Issue.record("must not deliver while a request is in flight")
            return
        }
        _ = machine.responseReady(HTTPResponse(status: .ok), date: Self.date, now: 0)
        let second = try #require(delivered(machine.writeCompleted(now: 0)))
        #expect(second.head.target == "/2")
        _ = machine.responseReady(HTTPResponse(status: .ok), date: Self.date, now: 0)
        let third = try #require(delivered(machine.writeCompleted(now: 0)))
        #expect(third.head.target == "/3")
    }

    @Test func headerTimeoutAnswers408ThenCloses() throws {
        var machine = Machine(limits: limits(), now: 0)
        guard case .none = feed(&machine, "GET /slow HTTP/1.1\r\nHost: x\r\nHo", now: 1) else {
            Issue.record("partial head must wait")
            return
        }
        guard case .none = machine.timerFired(now: 5 * Self.second) else {
            Issue.record("an early timer must do nothing")
            return
        }
        guard case .renderError(let error, _) = machine.timerFired(now: 10 * Self.second) else {
            Issue.record("expected 408")
            return
        }
        #expect(error.status == .requestTimeout && error.code == "request_timeout")
        let out = try #require(
            written(machine.responseReady(HTTPResponse(status: error.status), date: Self.date, now: 0)))
        #expect(out.hasPrefix("HTTP/1.1 408 Request Timeout\r\n"))
        #expect(out.contains("Connection: close\r\n"))
        guard case .close(graceful: true) = machine.writeCompleted(now: 0) else {
            Issue.record("expected a graceful close")
            return
        }
    }

    @Test func silentConnectionAndIdleTimeoutCloseWithoutResponse() throws {
        var fresh = Machine(limits: limits(), now: 0)
        guard case .close(graceful: false) = fresh.timerFired(now: 10 * Self.second) else {
            Issue.record("a connection that never sent a byte closes silently")
            return
        }
        var idle = Machine(limits: limits(), now: 0)
        _ = feed(&idle, "GET / HTTP/1.1\r\nHost: x\r\n\r\n", now: 0)
        _ = idle.responseReady(HTTPResponse(status: .ok), date: Self.date, now: 0)
        _ = idle.writeCompleted(now: Self.second)
        guard case .none = idle.timerFired(now: 30 * Self.second) else {
            Issue.record("idle deadline not reached")
            return
        }
        guard case .close(graceful: false) = idle.timerFired(now: 61 * Self.second) else {
            Issue.record("idle timeout closes silently")
            return
        }
    }

    @Test func expectContinueOnlyBeforeBodyArrives() throws {
        var machine = Machine(limits: limits(), now: 0)
        let head = "POST /u HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n"
        #expect(written(feed(&machine, head, now: 0)) == "HTTP/1.1 100 Continue\r\n\r\n")
        guard case .none = machine.writeCompleted(now: 0) else {
            Issue.record("writing the interim response changes nothing")
            return
        }
        let request = try #require(delivered(feed(&machine, "hello", now: 0)))
        #expect(request.body == Array("hello".utf8))

        var eager = Machine(limits: limits(), now: 0)
        let whole = try #require(delivered(feed(&eager, head + "hello", now: 0)))
        #expect(whole.body == Array("hello".utf8))
    }

    @Test func declaredBodyOverLimitIsRefusedUnread() throws {
        var machine = Machine(limits: limits(), now: 0)
        let action = feed(
            &machine, "POST /u HTTP/1.1\r\nHost: x\r\nContent-Length: 101\r\nExpect: 100-continue\r\n\r\n", now: 0)
        guard case .renderError(let error, let head) = action else {
            Issue.record("expected 413, got \(action)")
            return
        }
        #expect(error.code == "payload_too_large")
        #expect(head?.target == "/u")
    }

    @Test func chunkedBodyOverLimit() throws {
        var machine = Machine(limits: limits(), now: 0)
        let chunk = String(repeating: "x", count: 60)
        let text =
            "POST /u HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n3c\r\n\(chunk)\r\n3c\r\n\(chunk)\r\n0\r\n\r\n"
        guard case .renderError(let error, _) = feed(&machine, text, now: 0) else {
            Issue.record("expected 413")
            return
        }
        #expect(error.status == .payloadTooLarge)
    }

    @Test func gzipBodyIsInflatedAndLimitedAfterDecoding() throws {
        let plain = Array(repeating: UInt8(ascii: "a"), count: 80)
        let gz = try #require(Compressor.gzip(plain))
        var machine = Machine(limits: limits(), now: 0)
        let head = "POST /u HTTP/1.1\r\nHost: x\r\nContent-Encoding: gzip\r\nContent-Length: \(gz.count)\r\n\r\n"
        _ = feed(&machine, head, now: 0)
        let request = try #require(delivered(gz.withUnsafeBytes { machine.bytesRead($0, now: 0) }))
        #expect(request.body == plain)

        // 1000 bytes compress to a few dozen but inflate past the 100-byte limit.
        let bomb = try #require(Compressor.gzip(Array(repeating: 0, count: 1000)))
        var limited = Machine(limits: limits(), now: 0)
        _ = feed(
            &limited, "POST /u HTTP/1.1\r\nHost: x\r\nContent-Encoding: gzip\r\nContent-Length: \(bomb.count)\r\n\r\n",
            now: 0)
        guard case .renderError(let error, _) = bomb.withUnsafeBytes({ limited.bytesRead($0, now: 0) }) else {
            Issue.record("expected 413")
            return
        }
        #expect(error.code == "payload_too_large")
    }

    @Test func unsupportedContentEncodingIs415() {
        var machine = Machine(limits: limits(), now: 0)
        guard
            case .renderError(let error, _) = feed(
                &machine, "POST /u HTTP/1.1\r\nHost: x\r\nContent-Encoding: br\r\nContent-Length: 1\r\n\r\nx", now: 0)
        else {
            Issue.record("expected 415")
            return
        }
        #expect(error.code == "unsupported_media_type")
    }

    @Test func headResponseHasLengthButNoBody() throws {
        var machine = Machine(limits: limits(), now: 0)
        _ = feed(&machine, "HEAD /a HTTP/1.1\r\nHost: x\r\n\r\n", now: 0)
        let out = try #require(
            written(
                machine.responseReady(HTTPResponse(status: .ok, body: Array("12345".utf8)), date: Self.date, now: 0)))
        #expect(out == "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nDate: \(Self.date)\r\n\r\n")
    }

    @Test func http10KeepAliveAndClose() throws {
        var keep = Machine(limits: limits(), now: 0)
        _ = feed(&keep, "GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n", now: 0)
        let out = try #require(written(keep.responseReady(HTTPResponse(status: .ok), date: Self.date, now: 0)))
        #expect(out.hasSuffix("Connection: keep-alive\r\n\r\n"))
        guard case .none = keep.writeCompleted(now: 0) else {
            Issue.record("1.0 keep-alive stays open")
            return
        }
        var plain = Machine(limits: limits(), now: 0)
        _ = feed(&plain, "GET / HTTP/1.0\r\n\r\n", now: 0)
        let closing = try #require(written(plain.responseReady(HTTPResponse(status: .ok), date: Self.date, now: 0)))
        #expect(closing.hasSuffix("Connection: close\r\n\r\n"))
        guard case .close = plain.writeCompleted(now: 0) else {
            Issue.record("1.0 without keep-alive closes")
            return
        }
    }

    @Test func drainClosesIdleAndFinishesInFlight() throws {
        var idle = Machine(limits: limits(), now: 0)
        guard case .close(graceful: false) = idle.beginDrain() else {
            Issue.record("idle connection closes on drain")
            return
        }
        var busy = Machine(limits: limits(), now: 0)
        _ = feed(&busy, "GET / HTTP/1.1\r\nHost: x\r\n\r\n", now: 0)
        guard case .none = busy.beginDrain() else {
            Issue.record("in-flight request keeps the connection")
            return
        }
        let out = try #require(written(busy.responseReady(HTTPResponse(status: .ok), date: Self.date, now: 0)))
        #expect(out.contains("Connection: close\r\n"))
    }

    @Test func gzipResponseWhenAccepted() throws {
        var machine = Machine(limits: limits(), now: 0)
        _ = feed(&machine, "GET / HTTP/1.1\r\nHost: x\r\nAccept-Encoding: br, gzip;q=0.5\r\n\r\n", now: 0)
        let body = Array(String(repeating: "hello ", count: 300).utf8)
        guard
            case .write(let bytes) = machine.responseReady(
                HTTPResponse(status: .ok, body: body), date: Self.date, now: 0)
        else {
            Issue.record("expected a write")
            return
        }
        let text = String(decoding: bytes, as: UTF8.self)
        #expect(text.contains("Content-Encoding: gzip\r\n"))
        #expect(text.contains("Vary: Accept-Encoding\r\n"))
        let split = try #require(bytes.firstRange(of: Array("\r\n\r\n".utf8)))
        var inflated: [UInt8] = []
        try bytes[split.upperBound...].withUnsafeBytes { try Decompressor(limit: 1 << 20).inflate($0, into: &inflated) }
        #expect(inflated == body)

        #expect(!Machine.acceptsGzip(["Accept-Encoding": "gzip;q=0"]))
        #expect(Machine.acceptsGzip(["Accept-Encoding": "*"]))
        #expect(!Machine.acceptsGzip(["Accept-Encoding": "identity"]))
    }
}

import HTTP1
import Testing

@testable import HTTPServer

/// Drives `ConnectionStateMachine` with bytes and a manual clock; no sockets. Every transition
/// is checked by comparing whole actions and framings.
@Suite struct StateMachineTests {
    typealias Machine = ConnectionStateMachine
    static let second: UInt64 = 1_000_000_000

    private func limits() -> Machine.Limits {
        var configuration = HTTPServer.Configuration()
        configuration.maxBodyBytes = 100
        configuration.headerReadTimeout = .seconds(10)
        configuration.idleTimeout = .seconds(60)
        return Machine.Limits(configuration)
    }

    private func feed(_ machine: inout Machine, _ text: String, now: UInt64) -> Machine.Action {
        Array(text.utf8).withUnsafeBytes { machine.bytesRead($0, now: now) }
    }

    /// The request the parser makes of `text`, to compare `.deliver` actions with.
    private func request(_ text: String, body: String = "") throws -> HTTPRequest {
        let bytes = Array(text.utf8)
        guard case .complete(let head, _) = bytes.withUnsafeBytes({ parseRequestHead($0, limits: HTTPParserLimits()) })
        else { throw Failure.notAHead }
        return HTTPRequest(head: head, body: Array(body.utf8))
    }

    private func head(_ text: String) throws -> HTTPRequestHead { try request(text).head }

    private enum Failure: Error { case notAHead }

    private static func framing(
        _ version: HTTPVersion = .http1_1, head: Bool = false, closing: Bool = false, gzip: Bool = false
    ) -> HTTPResponseFraming {
        HTTPResponseFraming(requestVersion: version, isHead: head, closing: closing, gzip: gzip)
    }

    @Test func simpleRequestResponseThenIdle() throws {
        var machine = Machine(limits: limits(), now: 0)
        #expect(machine.deadline == 10 * Self.second)
        let get = "GET /a HTTP/1.1\r\nHost: x\r\n\r\n"
        #expect(feed(&machine, get, now: 1) == .deliver(try request(get)))
        #expect(!machine.wantsRead)
        #expect(machine.deadline == nil)
        #expect(machine.responseReady(HTTPResponse(status: .ok, body: Array("hi".utf8)), now: 2) == Self.framing())
        #expect(machine.deadline == 2 + 60 * Self.second)
        #expect(machine.writeCompleted(now: 3) == .none)
        #expect(machine.isIdle)
        #expect(machine.wantsRead)
        #expect(machine.deadline == 3 + 60 * Self.second)
        // No request awaits an answer now: nothing to frame.
        #expect(machine.responseReady(HTTPResponse(status: .ok), now: 4) == nil)
    }

    @Test func pipelinedRequestsAreTakenOneAtATime() throws {
        var machine = Machine(limits: limits(), now: 0)
        let (one, two, three) = (
            "GET /1 HTTP/1.1\r\nHost: x\r\n\r\n", "GET /2 HTTP/1.1\r\nHost: x\r\n\r\n",
            "GET /3 HTTP/1.1\r\nHost: x\r\n\r\n"
        )
        #expect(feed(&machine, one + two, now: 0) == .deliver(try request(one)))
        // More bytes while the app answers are buffered, not parsed.
        #expect(feed(&machine, three, now: 0) == .none)
        #expect(machine.responseReady(HTTPResponse(status: .ok), now: 0) == Self.framing())
        #expect(machine.writeCompleted(now: 0) == .deliver(try request(two)))
        #expect(machine.responseReady(HTTPResponse(status: .ok), now: 0) == Self.framing())
        #expect(machine.writeCompleted(now: 0) == .deliver(try request(three)))
    }

    /// However the socket cuts the bytes of a connection into reads, the same requests come out
    /// in order: a head parsed where a read's bytes lie, one cut short and finished from the
    /// buffer, a body that came with its head or after it, a pipelined request behind another.
    @Test func everyCutOfTheStreamDeliversTheSameRequests() throws {
        let get = "GET /1 HTTP/1.1\r\nHost: x\r\n\r\n"
        let post = "POST /2 HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\n"
        let last = "GET /3 HTTP/1.1\r\nHost: x\r\n\r\n"
        let stream = Array((get + post + "hello" + last).utf8)
        let expected = [try request(get), try request(post, body: "hello"), try request(last)]
        for firstCut in 1..<stream.count {
            for secondCut in [firstCut + 1, firstCut + 7, stream.count] where secondCut <= stream.count {
                var machine = Machine(limits: limits(), now: 0)
                var delivered: [HTTPRequest] = []
                var reads = [stream[..<firstCut], stream[firstCut..<secondCut]]
                if secondCut < stream.count { reads.append(stream[secondCut...]) }
                for read in reads {
                    var action = Array(read).withUnsafeBytes { machine.bytesRead($0, now: 0) }
                    while case .deliver(let request) = action {
                        delivered.append(request)
                        _ = machine.responseReady(HTTPResponse(status: .ok), now: 0)
                        action = machine.writeCompleted(now: 0)
                    }
                    #expect(action == .none, "cuts \(firstCut), \(secondCut): \(action)")
                }
                #expect(delivered == expected, "cuts \(firstCut), \(secondCut)")
                #expect(machine.isIdle, "cuts \(firstCut), \(secondCut)")
            }
        }
    }

    /// A request that arrives in one read, as nearly all do, leaves no buffer behind it.
    @Test func aRequestInOneReadIsNotBuffered() throws {
        var machine = Machine(limits: limits(), now: 0)
        let get = "GET /a HTTP/1.1\r\nHost: x\r\n\r\n"
        for _ in 0..<3 {
            #expect(feed(&machine, get, now: 0) == .deliver(try request(get)))
            #expect(machine.bufferCapacity == 0)
            _ = machine.responseReady(HTTPResponse(status: .ok), now: 0)
            #expect(machine.writeCompleted(now: 0) == .none)
        }
    }

    @Test func headerTimeoutAnswers408ThenCloses() throws {
        var machine = Machine(limits: limits(), now: 0)
        #expect(feed(&machine, "GET /slow HTTP/1.1\r\nHost: x\r\nHo", now: 1) == .none)
        #expect(machine.timerFired(now: 5 * Self.second) == .none, "an early timer does nothing")
        #expect(machine.timerFired(now: 10 * Self.second) == .renderError(.requestTimeout, nil))
        #expect(machine.responseReady(HTTPResponse(status: .requestTimeout), now: 0) == Self.framing(closing: true))
        #expect(machine.writeCompleted(now: 0) == .close(graceful: true))
    }

    @Test func silentConnectionAndIdleTimeoutCloseWithoutResponse() throws {
        var fresh = Machine(limits: limits(), now: 0)
        #expect(fresh.timerFired(now: 10 * Self.second) == .close(graceful: false))
        var idle = Machine(limits: limits(), now: 0)
        _ = feed(&idle, "GET / HTTP/1.1\r\nHost: x\r\n\r\n", now: 0)
        _ = idle.responseReady(HTTPResponse(status: .ok), now: 0)
        #expect(idle.writeCompleted(now: Self.second) == .none)
        #expect(idle.timerFired(now: 30 * Self.second) == .none, "idle deadline not reached")
        #expect(idle.timerFired(now: 61 * Self.second) == .close(graceful: false))
    }

    @Test func expectContinueOnlyBeforeBodyArrives() throws {
        var machine = Machine(limits: limits(), now: 0)
        let post = "POST /u HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n"
        #expect(feed(&machine, post, now: 0) == .sendContinue)
        #expect(machine.writeCompleted(now: 0) == .none, "writing the interim response changes nothing")
        #expect(feed(&machine, "hello", now: 0) == .deliver(try request(post, body: "hello")))

        var eager = Machine(limits: limits(), now: 0)
        #expect(feed(&eager, post + "hello", now: 0) == .deliver(try request(post, body: "hello")))
    }

    @Test func declaredBodyOverLimitIsRefusedUnread() throws {
        var machine = Machine(limits: limits(), now: 0)
        let post = "POST /u HTTP/1.1\r\nHost: x\r\nContent-Length: 101\r\nExpect: 100-continue\r\n\r\n"
        #expect(feed(&machine, post, now: 0) == .renderError(.payloadTooLarge, try head(post)))
        #expect(machine.responseReady(HTTPResponse(status: .payloadTooLarge), now: 0) == Self.framing(closing: true))
    }

    @Test func chunkedBodyOverLimit() throws {
        var machine = Machine(limits: limits(), now: 0)
        let post = "POST /u HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
        let chunk = String(repeating: "x", count: 60)
        // The second size line alone takes the body past 100 bytes: refused before its data.
        #expect(
            feed(&machine, post + "3c\r\n\(chunk)\r\n3c\r\n", now: 0) == .renderError(.payloadTooLarge, try head(post)))
    }

    @Test func declaredChunkOverLimitIsRefusedWithoutItsData() throws {
        var machine = Machine(limits: limits(), now: 0)
        let post = "POST /u HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
        #expect(feed(&machine, post, now: 0) == .none)
        #expect(feed(&machine, "40000000\r\n", now: 0) == .renderError(.payloadTooLarge, try head(post)))
    }

    @Test func gzipBodyIsInflatedAndLimitedAfterDecoding() throws {
        let plain = Array(repeating: UInt8(ascii: "a"), count: 80)
        let gz = try #require(Compressor.gzip(plain))
        var machine = Machine(limits: limits(), now: 0)
        let post = "POST /u HTTP/1.1\r\nHost: x\r\nContent-Encoding: gzip\r\nContent-Length: \(gz.count)\r\n\r\n"
        #expect(feed(&machine, post, now: 0) == .none)
        let inflated = HTTPRequest(head: try head(post), body: plain)
        #expect(gz.withUnsafeBytes { machine.bytesRead($0, now: 0) } == .deliver(inflated))

        // 1000 bytes compress to a few dozen but inflate past the 100-byte limit.
        let bomb = try #require(Compressor.gzip(Array(repeating: 0, count: 1000)))
        var limited = Machine(limits: limits(), now: 0)
        let bombPost = "POST /u HTTP/1.1\r\nHost: x\r\nContent-Encoding: gzip\r\nContent-Length: \(bomb.count)\r\n\r\n"
        _ = feed(&limited, bombPost, now: 0)
        #expect(
            bomb.withUnsafeBytes { limited.bytesRead($0, now: 0) } == .renderError(.payloadTooLarge, try head(bombPost))
        )
    }

    @Test func unsupportedContentEncodingIs415() throws {
        var machine = Machine(limits: limits(), now: 0)
        let post = "POST /u HTTP/1.1\r\nHost: x\r\nContent-Encoding: br\r\nContent-Length: 1\r\n\r\n"
        #expect(feed(&machine, post + "x", now: 0) == .renderError(.unsupportedContentCoding, try head(post)))
    }

    @Test func invalidHostIsRefusedAndCloses() throws {
        var machine = Machine(limits: limits(), now: 0)
        let get = "GET / HTTP/1.1\r\nHost: local/host\r\n\r\n"
        #expect(feed(&machine, get, now: 0) == .renderError(.invalidHost, try head(get)))
        #expect(machine.responseReady(HTTPResponse(status: .badRequest), now: 0) == Self.framing(closing: true))
        #expect(machine.writeCompleted(now: 0) == .close(graceful: true))
    }

    /// A connection compares each `Host` with the last valid one rather than parsing it again:
    /// a different value, valid or not, is still checked.
    @Test func everyRequestsHostIsCheckedOnAKeptAliveConnection() throws {
        var machine = Machine(limits: limits(), now: 0)
        for host in ["a.example:8080", "a.example:8080", "b.example", "a.example:8080"] {
            let get = "GET / HTTP/1.1\r\nHost: \(host)\r\n\r\n"
            #expect(feed(&machine, get, now: 0) == .deliver(try request(get)), "\(host)")
            #expect(machine.responseReady(HTTPResponse(status: .ok), now: 0) == Self.framing())
            #expect(machine.writeCompleted(now: 0) == .none)
        }
        let bad = "GET / HTTP/1.1\r\nHost: a.example:80800\r\n\r\n"
        #expect(feed(&machine, bad, now: 0) == .renderError(.invalidHost, try head(bad)))
    }

    @Test func headResponseIsFramedAsHead() throws {
        var machine = Machine(limits: limits(), now: 0)
        _ = feed(&machine, "HEAD /a HTTP/1.1\r\nHost: x\r\n\r\n", now: 0)
        #expect(
            machine.responseReady(HTTPResponse(status: .ok, body: Array("12345".utf8)), now: 0)
                == Self.framing(head: true))
    }

    @Test func http10KeepAliveAndClose() throws {
        var keep = Machine(limits: limits(), now: 0)
        _ = feed(&keep, "GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n", now: 0)
        #expect(keep.responseReady(HTTPResponse(status: .ok), now: 0) == Self.framing(.http1_0))
        #expect(keep.writeCompleted(now: 0) == .none, "1.0 keep-alive stays open")
        var plain = Machine(limits: limits(), now: 0)
        _ = feed(&plain, "GET / HTTP/1.0\r\n\r\n", now: 0)
        #expect(plain.responseReady(HTTPResponse(status: .ok), now: 0) == Self.framing(.http1_0, closing: true))
        #expect(plain.writeCompleted(now: 0) == .close(graceful: true))
    }

    @Test func responseAskingToCloseCloses() throws {
        var machine = Machine(limits: limits(), now: 0)
        _ = feed(&machine, "GET / HTTP/1.1\r\nHost: x\r\n\r\n", now: 0)
        let response = HTTPResponse(status: .ok, headers: ["Connection": "Close"])
        #expect(machine.responseReady(response, now: 0) == Self.framing(closing: true))
        #expect(machine.writeCompleted(now: 0) == .close(graceful: true))
    }

    @Test func drainClosesIdleAndFinishesInFlight() throws {
        var idle = Machine(limits: limits(), now: 0)
        #expect(idle.beginDrain() == .close(graceful: false))
        var busy = Machine(limits: limits(), now: 0)
        _ = feed(&busy, "GET / HTTP/1.1\r\nHost: x\r\n\r\n", now: 0)
        #expect(busy.beginDrain() == .none, "an in-flight request keeps the connection")
        #expect(busy.responseReady(HTTPResponse(status: .ok), now: 0) == Self.framing(closing: true))
    }

    @Test func gzipIsDecidedByRequestAndResponse() throws {
        let long = Array(String(repeating: "hello ", count: 300).utf8)
        func framing(accept: String, _ response: HTTPResponse) -> HTTPResponseFraming? {
            var machine = Machine(limits: limits(), now: 0)
            _ = feed(&machine, "GET / HTTP/1.1\r\nHost: x\r\nAccept-Encoding: \(accept)\r\n\r\n", now: 0)
            return machine.responseReady(response, now: 0)
        }
        #expect(framing(accept: "br, gzip;q=0.5", HTTPResponse(status: .ok, body: long)) == Self.framing(gzip: true))
        #expect(framing(accept: "gzip;q=0", HTTPResponse(status: .ok, body: long)) == Self.framing())
        // Too short to be worth it, already encoded, or a status without content: sent as is.
        #expect(framing(accept: "gzip", HTTPResponse(status: .ok, body: Array(long[..<100]))) == Self.framing())
        let encoded = HTTPResponse(status: .ok, headers: ["Content-Encoding": "br"], body: long)
        #expect(framing(accept: "gzip", encoded) == Self.framing())
        #expect(framing(accept: "gzip", HTTPResponse(status: .noContent, body: long)) == Self.framing())
    }

    @Test func gzipResponseInflatesToTheBody() throws {
        let body = Array(String(repeating: "hello ", count: 300).utf8)
        var bytes: [UInt8] = []
        HTTPResponse(status: .ok, body: body).serialize(
            framing: Self.framing(gzip: true), date: "Sun, 06 Nov 1994 08:49:37 GMT", into: &bytes)
        let text = String(decoding: bytes, as: UTF8.self)
        #expect(text.contains("Content-Encoding: gzip\r\n"))
        let split = try #require(bytes.firstRange(of: Array("\r\n\r\n".utf8)))
        var inflated: [UInt8] = []
        try bytes[split.upperBound...].withUnsafeBytes { try Decompressor(limit: 1 << 20).inflate($0, into: &inflated) }
        #expect(inflated == body)
    }
}

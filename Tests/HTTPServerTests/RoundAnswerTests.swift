import Dispatch
import Glibc
import HTTP1
import Synchronization
import Testing

@testable import HTTPServer

/// The answers an event loop makes in one round are written when the round ends, together
/// (`LoopContext.queueAnswer`), not each as soon as it is made.
@Suite(.serialized) struct RoundAnswerTests {
    /// `/hold` keeps the loop busy until released, so requests sent meanwhile wait in their
    /// sockets and the next wake-up finds them all. Each `/probe/<name>` after the first of its
    /// round looks, for up to 200 ms, whether the answer to the one before it reached its client.
    final class ProbingResponder: Responder {
        struct State {
            var clients: [String: Int32] = [:]
            var probesRun: [String] = []
            var earlierAnswerArrived: [Bool] = []
        }
        let holding = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        let state = Mutex(State())

        func respond(to request: HTTPRequest, completion: ResponseCompletion) {
            let path = request.head.path
            if path == "/hold" {
                holding.signal()
                _ = release.wait(timeout: .now() + .seconds(5))
            } else if path.hasPrefix("/probe/") {
                let name = String(path.dropFirst("/probe/".count))
                let earlier = state.withLock { state -> Int32? in
                    defer { state.probesRun.append(name) }
                    return state.probesRun.last.flatMap { state.clients[$0] }
                }
                if let earlier {
                    // Written at once, the earlier answer is in its client's socket within
                    // microseconds; written at the round's end, not before this handler returns.
                    var waiting = pollfd(fd: earlier, events: Int16(POLLIN), revents: 0)
                    let arrived = poll(&waiting, 1, 200) > 0
                    state.withLock { $0.earlierAnswerArrived.append(arrived) }
                }
            }
            completion(HTTPResponse(status: .ok, body: Array("ok".utf8)))
        }

        func respond(toProtocolError error: HTTPParseError, requestHead: HTTPRequestHead?) -> HTTPResponse {
            HTTPResponse(status: error.status, body: Array(error.code.utf8))
        }
    }

    @Test func theAnswersOfOneWakeUpAreWrittenWhenItEnds() throws {
        let responder = ProbingResponder()
        // One loop, so the holding request and the probes share it.
        let server = HTTPServer(configuration: .init(port: 0, eventLoopCount: 1), responder: responder)
        let port = try server.start()
        defer { server.shutdown(drainTimeout: .seconds(2)) }
        let holder = try RawClient(port: port)
        let probes = try ["a", "b", "c"].map { ($0, try RawClient(port: port)) }
        // Each probe connection accepted and answered once before the hold, so the loop has them
        // all registered; these warm-up requests run in rounds of their own, one after another.
        for (name, client) in probes {
            client.send("GET /warm/\(name) HTTP/1.1\r\nHost: x\r\n\r\n")
            #expect(try client.readResponse().body == Array("ok".utf8))
        }
        responder.state.withLock { state in
            for (name, client) in probes { state.clients[name] = client.fd }
        }

        holder.send("GET /hold HTTP/1.1\r\nHost: x\r\n\r\n")
        try #require(responder.holding.wait(timeout: .now() + .seconds(5)) == .success)
        for (name, client) in probes { client.send("GET /probe/\(name) HTTP/1.1\r\nHost: x\r\n\r\n") }
        usleep(100_000)  // every probe in its socket before the loop can wake
        responder.release.signal()

        #expect(try holder.readResponse().body == Array("ok".utf8))
        for (_, client) in probes { #expect(try client.readResponse().body == Array("ok".utf8)) }
        let state = responder.state.withLock { $0 }
        #expect(Set(state.probesRun) == ["a", "b", "c"])
        // The second and third probe of the round each looked: no earlier answer had gone out.
        #expect(state.earlierAnswerArrived == [false, false])
    }
}

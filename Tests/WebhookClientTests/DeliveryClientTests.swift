import Foundation
import Glibc
import Reactor
import Testing
import Threads
import WebhookClient

private func elapsed(_ body: () throws -> Void) rethrows -> Double {
    let start = monotonicNanoseconds()
    try body()
    return Double(monotonicNanoseconds() - start) / 1e9
}

private func kind(of body: () throws -> Int) -> WebhookClientError.Kind? {
    do {
        _ = try body()
        return nil
    } catch let error as WebhookClientError {
        return error.kind
    } catch {
        return nil
    }
}

@Suite struct DeliveryURLTests {
    @Test func splitsSchemeHostPortAndTarget() throws {
        let url = try DeliveryURL("HTTPS://Hooks.Example.com:8443/in/buzzkit?x=1#frag")
        #expect(url == DeliveryURL(isTLS: true, host: "hooks.example.com", port: 8443, target: "/in/buzzkit?x=1"))
        #expect(url.hostField == "hooks.example.com:8443")
        let plain = try DeliveryURL("http://127.0.0.1")
        #expect(plain == DeliveryURL(isTLS: false, host: "127.0.0.1", port: 80, target: "/"))
        #expect(plain.hostIsIPLiteral && plain.hostField == "127.0.0.1")
        let v6 = try DeliveryURL("https://[::1]:9000?q")
        #expect(v6 == DeliveryURL(isTLS: true, host: "::1", port: 9000, target: "/?q"))
        #expect(v6.hostField == "[::1]:9000" && v6.hostIsIPLiteral)
        #expect(try DeliveryURL("https://example.com/").hostField == "example.com")
    }

    @Test(arguments: [
        "ftp://example.com/", "example.com/hook", "http://", "http:///path", "http://user@example.com/",
        "http://example.com:0/", "http://example.com:65536/", "http://example.com:/", "http://example.com:8x/",
        "http://exa mple.com/", "http://example.com/a b", "http://[::1/", "http://[::1]x/", "http://bücher.de/",
    ])
    func refuses(url: String) {
        #expect(throws: WebhookClientError(.invalidURL, "")) {
            do { _ = try DeliveryURL(url) } catch let error as WebhookClientError {
                throw WebhookClientError(error.kind, "")
            }
        }
    }
}

extension DeliveryURL {
    fileprivate init(isTLS: Bool, host: String, port: Int, target: String) {
        // Built through the parser, so the test compares against what a URL string gives.
        let scheme = isTLS ? "https" : "http"
        let name = host.contains(":") ? "[\(host)]" : host
        try! self.init("\(scheme)://\(name):\(port)\(target)")
    }
}

@Suite struct ResolvedAddressTests {
    @Test(
        arguments: [
            ([127, 0, 0, 1], true), ([10, 1, 2, 3], true), ([172, 16, 0, 1], true), ([172, 32, 0, 1], false),
            ([192, 168, 1, 1], true), ([169, 254, 169, 254], true), ([100, 64, 0, 1], true), ([0, 0, 0, 0], true),
            ([8, 8, 8, 8], false), ([203, 0, 113, 7], false), ([224, 0, 0, 1], true),
        ] as [([UInt8], Bool)])
    func ipv4(bytes: [UInt8], isPrivate: Bool) {
        #expect(ResolvedAddress(bytes: bytes).isPrivateOrLocal == isPrivate, "\(bytes)")
    }

    @Test func ipv6() {
        func v6(_ head: [UInt8], tail: [UInt8] = []) -> ResolvedAddress {
            ResolvedAddress(bytes: head + [UInt8](repeating: 0, count: 16 - head.count - tail.count) + tail)
        }
        #expect(v6([], tail: [1]).isPrivateOrLocal)  // ::1
        #expect(v6([]).isPrivateOrLocal)  // ::
        #expect(v6([0xFE, 0x80]).isPrivateOrLocal)
        #expect(v6([0xFD, 0x12]).isPrivateOrLocal)
        #expect(v6([], tail: [0xFF, 0xFF, 127, 0, 0, 1]).isPrivateOrLocal)  // ::ffff:127.0.0.1
        #expect(!v6([], tail: [0xFF, 0xFF, 8, 8, 8, 8]).isPrivateOrLocal)
        #expect(!v6([0x20, 0x01, 0x0D, 0xB8], tail: [1]).isPrivateOrLocal)
        #expect(v6([0x20, 0x01, 0x0D, 0xB8], tail: [1]).description == "2001:db8::1")
    }
}

@Suite struct DeliveryClientPlainTests {
    let client: DeliveryClient

    init() throws {
        client = try DeliveryClient()
    }

    @Test func postsHeadersAndBodyAndReturnsTheStatus() throws {
        let receiver = try LoopbackReceiver { fd, receiver in
            _ = receiver.readRequest(fd)
            LoopbackReceiver.send("HTTP/1.1 202 Accepted\r\nContent-Length: 2\r\n\r\nok", to: fd)
            close(fd)
        }
        let body = Array(#"{"id":"evt_1","type":"webhook.test"}"#.utf8)
        let status = try client.post(
            url: "http://127.0.0.1:\(receiver.port)/hooks/in?x=1",
            headers: [("Content-Type", "application/json"), ("webhook-id", "evt_1"), ("webhook-signature", "v1,abc=")],
            body: body, timeout: .seconds(5))
        #expect(status == 202)
        let request = try #require(receiver.received.first)
        let text = String(decoding: request, as: UTF8.self)
        let head = text.components(separatedBy: "\r\n\r\n")[0].components(separatedBy: "\r\n")
        #expect(head[0] == "POST /hooks/in?x=1 HTTP/1.1")
        #expect(head.contains("Host: 127.0.0.1:\(receiver.port)"))
        #expect(head.contains("Content-Type: application/json"))
        #expect(head.contains("webhook-id: evt_1"))
        #expect(head.contains("webhook-signature: v1,abc="))
        #expect(head.contains("Content-Length: \(body.count)"))
        #expect(head.contains("Connection: close"))
        #expect(head.contains { $0.hasPrefix("User-Agent: BuzzKit-Webhooks/") })
        #expect(Array(request.suffix(body.count)) == body)
    }

    @Test(arguments: [
        ("HTTP/1.1 500 Internal Server Error\r\n\r\n", 500),
        ("HTTP/1.1 410 Gone\r\nContent-Length: 0\r\n\r\n", 410),
        ("HTTP/1.0 204\r\n\r\n", 204),
        (
            "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\nHTTP/1.1 201 Created\r\n\r\n",
            201
        ),
    ])
    func returnsTheFinalStatus(answer: String, expected: Int) throws {
        let receiver = try LoopbackReceiver { fd, receiver in
            _ = receiver.readRequest(fd)
            LoopbackReceiver.send(answer, to: fd)
            close(fd)
        }
        #expect(
            try client.post(url: "http://127.0.0.1:\(receiver.port)/", headers: [], body: [], timeout: .seconds(5))
                == expected)
    }

    @Test func readsOnlyAFewKiBOfAnAnswerWithoutAStatusLine() throws {
        // A peer streaming megabytes of junk costs 4 KiB of reading, not its full output.
        let receiver = try LoopbackReceiver { fd, receiver in
            _ = receiver.readRequest(fd)
            LoopbackReceiver.send("HTTP/1.1 200 " + String(repeating: "x", count: 100_000), to: fd)
            close(fd)
        }
        #expect(
            kind {
                try client.post(url: "http://127.0.0.1:\(receiver.port)/", headers: [], body: [], timeout: .seconds(5))
            } == .invalidResponse)
    }

    @Test(arguments: [
        ("SSH-2.0-OpenSSH_9.2\r\n", WebhookClientError.Kind.invalidResponse), ("", .connectionClosed),
        ("HTTP/1.1 20", .connectionClosed),
    ])
    func refusesWhatIsNotAStatusLine(answer: String, expected: WebhookClientError.Kind) throws {
        let receiver = try LoopbackReceiver { fd, receiver in
            _ = receiver.readRequest(fd)
            LoopbackReceiver.send(answer, to: fd)
            close(fd)
        }
        #expect(
            kind {
                try client.post(url: "http://127.0.0.1:\(receiver.port)/", headers: [], body: [], timeout: .seconds(5))
            } == expected)
    }

    @Test func aPeerThatNeverAnswersTimesOutWithinTheTimeout() throws {
        let receiver = try LoopbackReceiver { fd, receiver in
            _ = receiver.readRequest(fd)
            sleep(5)  // holds the connection open, answers nothing
            close(fd)
        }
        var result: WebhookClientError.Kind?
        let seconds = elapsed {
            result = kind {
                try client.post(
                    url: "http://127.0.0.1:\(receiver.port)/", headers: [], body: [], timeout: .milliseconds(300))
            }
        }
        #expect(result == .timedOut)
        #expect(seconds >= 0.29 && seconds < 2, "took \(seconds) s")
    }

    @Test func aClosedPortIsAConnectFailure() {
        let port = closedLoopbackPort()
        #expect(
            kind { try client.post(url: "http://127.0.0.1:\(port)/", headers: [], body: [], timeout: .seconds(2)) }
                == .connectFailed)
    }

    @Test func anUnknownHostIsAResolveFailure() {
        #expect(
            kind { try client.post(url: "http://no-such-host.invalid/", headers: [], body: [], timeout: .seconds(2)) }
                == .resolveFailed)
    }

    @Test func theAddressFilterSeesTheResolvedAddressBeforeConnecting() throws {
        let receiver = try LoopbackReceiver { fd, receiver in
            _ = receiver.readRequest(fd)
            LoopbackReceiver.send("HTTP/1.1 200 OK\r\n\r\n", to: fd)
            close(fd)
        }
        var configuration = DeliveryClient.Configuration()
        configuration.allowsAddress = { !$0.isPrivateOrLocal }
        let strict = try DeliveryClient(configuration: configuration)
        #expect(
            kind {
                try strict.post(url: "http://127.0.0.1:\(receiver.port)/", headers: [], body: [], timeout: .seconds(2))
            } == .addressRefused)
        #expect(
            kind {
                try strict.post(url: "http://localhost:\(receiver.port)/", headers: [], body: [], timeout: .seconds(2))
            } == .addressRefused)
        #expect(receiver.received.isEmpty)
    }

    @Test(arguments: [
        [("X-Evil", "a\r\nHost: other")], [("Bad Name", "x")], [("X", "trailing ")], [("Content-Length", "0")],
        [("Host", "other")], [("transfer-encoding", "chunked")], [("", "x")],
    ])
    func refusesHeadersThatWouldChangeTheFraming(headers: [(String, String)]) throws {
        let receiver = try LoopbackReceiver { fd, receiver in
            _ = receiver.readRequest(fd)
            close(fd)
        }
        #expect(
            kind {
                try client.post(
                    url: "http://127.0.0.1:\(receiver.port)/", headers: headers, body: [], timeout: .seconds(2))
            } == .invalidHeader)
        #expect(receiver.received.isEmpty)
    }
}

@Suite struct DeliveryClientConnectTimeoutTests {
    @Test func aConnectThatHangsEndsAtTheConnectTimeout() throws {
        // A listener that never accepts, its queue filled: Linux drops further SYNs, so the
        // next connect hangs in SYN-SENT, as one to a black-holed address does.
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(listener) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
                _ = bind(listener, pointer, length)
                return getsockname(listener, pointer, &length)
            }
        }
        #expect(listen(listener, 0) == 0)
        var fillers: [Int32] = []
        defer { fillers.forEach { close($0) } }
        for _ in 0..<4 {
            let filler = socket(AF_INET, Int32(SOCK_STREAM.rawValue | SOCK_NONBLOCK.rawValue), 0)
            _ = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(filler, $0, length) }
            }
            fillers.append(filler)
        }
        usleep(100_000)
        var configuration = DeliveryClient.Configuration()
        configuration.connectTimeout = .milliseconds(300)
        let client = try DeliveryClient(configuration: configuration)
        let port = Int(UInt16(bigEndian: address.sin_port))
        var failure: WebhookClientError?
        let start = monotonicNanoseconds()
        do {
            _ = try client.post(url: "http://127.0.0.1:\(port)/", headers: [], body: [], timeout: .seconds(10))
        } catch let error as WebhookClientError {
            failure = error
        }
        let seconds = Double(monotonicNanoseconds() - start) / 1e9
        #expect(failure?.kind == .timedOut, "\(String(describing: failure))")
        #expect(failure?.message.contains("connect") == true, "\(String(describing: failure))")
        #expect(seconds >= 0.29 && seconds < 2, "took \(seconds) s, the total timeout was 10 s")
    }
}

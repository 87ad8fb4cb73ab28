import Dispatch
import Foundation
import Glibc
import HTTP1
import HTTPServer
import Testing

/// The application of the loopback tests: echoes, one slow route answered from another thread.
final class EchoResponder: Responder {
    func respond(to request: HTTPRequest, completion: ResponseCompletion) {
        switch request.head.path {
        case "/async":
            DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(150)) {
                completion(HTTPResponse(status: .ok, body: Array("async".utf8)))
            }
        case "/huge":
            // Larger than the socket buffers: forces partial writes and EPOLLOUT.
            completion(HTTPResponse(status: .ok, body: [UInt8](repeating: 0x68, count: 3 * 1024 * 1024)))
        case "/big":
            completion(HTTPResponse(status: .ok, body: Array(String(repeating: "0123456789", count: 200).utf8)))
        default:
            let text = "\(request.method) \(request.head.target) " + String(decoding: request.body, as: UTF8.self)
            completion(HTTPResponse(status: .ok, body: Array(text.utf8)))
        }
    }

    func respond(toProtocolError error: HTTPParseError, requestHead: HTTPRequestHead?) -> HTTPResponse {
        HTTPResponse(status: error.status, headers: ["Content-Type": "text/plain"], body: Array(error.code.utf8))
    }
}

/// A blocking loopback client speaking raw bytes, with a receive timeout so tests cannot hang.
final class RawClient: @unchecked Sendable {
    let fd: Int32
    private var pending: [UInt8] = []

    init(port: Int, timeout: Duration = .seconds(3)) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let rc = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard rc == 0 else {
            // Not closed here: every stored property is set, so Swift runs `deinit` for this
            // failed init, and it closes the fd. A second close would close whatever another
            // test running meanwhile had just been given that number (a likely cause of one
            // failure seen: `epoll_ctl` ADD answering EEXIST in a server that was starting while
            // the shutdown test expected a connect to fail).
            throw ClientError.connectFailed(errno)
        }
        var tv = timeval(
            tv_sec: Int(timeout.components.seconds), tv_usec: Int(timeout.components.attoseconds / 1_000_000_000_000))
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
    }

    deinit { close(fd) }

    enum ClientError: Error { case connectFailed(Int32), timeout, closed }

    func send(_ text: String) { send(Array(text.utf8)) }

    func send(_ bytes: [UInt8]) {
        var offset = 0
        while offset < bytes.count {
            let n = bytes[offset...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if n <= 0 { return }
            offset += n
        }
    }

    /// Reads more bytes; false on EOF, error or timeout.
    private func fill() -> Bool {
        var chunk = [UInt8](repeating: 0, count: 16 * 1024)
        let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        if n <= 0 { return false }
        pending.append(contentsOf: chunk[0..<n])
        return true
    }

    /// Reads exactly `count` bytes.
    func read(count: Int) throws -> [UInt8] {
        while pending.count < count { guard fill() else { throw ClientError.closed } }
        defer { pending.removeFirst(count) }
        return Array(pending[0..<count])
    }

    /// One response: the head as text with the `Date` line removed, and the body by Content-Length
    /// (none for HEAD).
    func readResponse(head isHead: Bool = false) throws -> (head: String, body: [UInt8]) {
        let separator = Array("\r\n\r\n".utf8)
        while pending.firstRange(of: separator) == nil { guard fill() else { throw ClientError.closed } }
        let end = pending.firstRange(of: separator)!.upperBound
        let head = String(decoding: pending[0..<end], as: UTF8.self)
        pending.removeFirst(end)
        var length = 0
        for line in head.split(separator: "\r\n") where line.lowercased().hasPrefix("content-length:") {
            length = Int(line.dropFirst("content-length:".count).filter { $0 != " " }) ?? 0
        }
        let body = isHead ? [] : try read(count: length)
        let withoutDate = head.split(separator: "\r\n", omittingEmptySubsequences: false)
            .filter { !$0.hasPrefix("Date: ") }.joined(separator: "\r\n")
        return (withoutDate, body)
    }

    /// True when the server closes the connection (EOF) with no further bytes.
    func isClosedByPeer() -> Bool {
        if !pending.isEmpty { return false }
        var byte: UInt8 = 0
        let n = recv(fd, &byte, 1, 0)
        return n == 0 || (n < 0 && errno == ECONNRESET)
    }
}

/// A server on a free port with small limits, shut down by `stop()`.
final class TestServer {
    let server: HTTPServer
    let port: Int

    init(configure: (inout HTTPServer.Configuration) -> Void = { _ in }) throws {
        var configuration = HTTPServer.Configuration(port: 0, eventLoopCount: 2)
        configuration.parserLimits.maxTargetLength = 64
        configuration.parserLimits.maxHeaderSectionBytes = 512
        configuration.maxBodyBytes = 1024
        configuration.headerReadTimeout = .milliseconds(400)
        configuration.idleTimeout = .seconds(5)
        configure(&configuration)
        server = HTTPServer(configuration: configuration, responder: EchoResponder())
        port = try server.start()
    }

    func client() throws -> RawClient { try RawClient(port: port) }

    func stop() { server.shutdown(drainTimeout: .seconds(2)) }
}

/// `expected` head lines (without Date) followed by the blank line.
func head(_ lines: String...) -> String {
    lines.map { $0 + "\r\n" }.joined() + "\r\n"
}

/// Runs `body` on a fresh pthread. Blocking work (shutdown's drain wait, a slow sender) must not
/// sit on Dispatch's small worker pool, where it would delay the responder's `asyncAfter`.
func runOnNewThread(_ body: @escaping @Sendable () -> Void) {
    final class Box: @unchecked Sendable {
        let body: @Sendable () -> Void
        init(_ body: @escaping @Sendable () -> Void) { self.body = body }
    }
    var thread = pthread_t()
    let box = Unmanaged.passRetained(Box(body)).toOpaque()
    let rc = pthread_create(
        &thread, nil,
        { raw in
            Unmanaged<Box>.fromOpaque(raw!).takeRetainedValue().body()
            return nil
        }, box)
    precondition(rc == 0)
    pthread_detach(thread)
}

/// Reads `value` every 10 ms until `done` holds of it, for at most two seconds: the server
/// settles on its own threads after a close. Returns the last value read, for the test to check.
func polled<T>(_ value: () -> T, until done: (T) -> Bool) -> T {
    var last = value()
    for _ in 0..<200 where !done(last) {
        usleep(10_000)
        last = value()
    }
    return last
}

/// The kernel ids of `server`'s event-loop threads, once each runs.
func loopThreads(of server: HTTPServer) throws -> Set<String> {
    // Asked of the server, not found by name: other suites' servers run in this process too.
    let ids = polled({ server.loopKernelThreadIDs }, until: { !$0.contains(0) })
    try #require(!ids.isEmpty && !ids.contains(0), "every loop thread running")
    for id in ids {
        let name = (try? String(contentsOfFile: "/proc/self/task/\(id)/comm", encoding: .utf8)) ?? ""
        #expect(name.hasPrefix("http-"), "thread \(id) is a loop, not \(name)")
    }
    return Set(ids.map(String.init))
}

/// User plus system CPU time of those threads, in clock ticks (/proc/<pid>/task/<tid>/stat).
func cpuTicks(of threads: Set<String>) -> Int {
    threads.reduce(0) { total, task in
        guard let stat = try? String(contentsOfFile: "/proc/self/task/\(task)/stat", encoding: .utf8),
            let afterName = stat.lastIndex(of: ")")
        else { return total }
        // Fields after the name: state is field 3, utime 14 and stime 15.
        let fields = stat[stat.index(after: afterName)...].split(separator: " ")
        return total + (Int(fields[11]) ?? 0) + (Int(fields[12]) ?? 0)
    }
}

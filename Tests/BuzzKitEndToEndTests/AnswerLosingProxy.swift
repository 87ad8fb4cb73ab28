import Foundation
import Glibc
import TestSupport

/// A loopback HTTP/1.1 proxy between an SDK client and `buzzkit serve` that loses one answer.
///
/// Every request goes to the server and its answer comes back, except the `losing`-th
/// `POST /v1/events`: that one reaches the server, whose whole answer is read (so the batch is
/// committed), then `onLoss` runs (the test kills and restarts the server) and the client's
/// connection is closed with nothing relayed. The client has seen a failure for a batch the server
/// kept, as when a server dies between its commit and its answer.
///
/// Until `start()` the port is bound but not listening: connections are refused, as by a server
/// that is down.
final class AnswerLosingProxy: @unchecked Sendable {
    /// One request as it passed: its request line, its `Idempotency-Key`, and the server's answer.
    struct Exchange: Sendable {
        var line: String
        var idempotencyKey: String?
        var status: Int
        /// The server answered from a kept `Idempotency-Key` (`Idempotent-Replayed: true`).
        var replayed: Bool
        /// False for the answer that was lost.
        var relayed: Bool
    }

    let port: Int
    var baseURL: URL { URL(string: "http://127.0.0.1:\(port)")! }
    private let upstreamPort: Int
    private let losing: Int
    private let onLoss: @Sendable () throws -> Void
    private let listener: Int32
    private let lock = NSLock()
    private var log: [Exchange] = []
    private var eventRequests = 0
    private var sockets: Set<Int32> = []
    private var lossError: (any Error)?

    init(upstreamPort: Int, losingEventsRequest losing: Int, onLoss: @escaping @Sendable () throws -> Void) throws {
        self.upstreamPort = upstreamPort
        self.losing = losing
        self.onLoss = onLoss
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue | SOCK_CLOEXEC.rawValue), 0)
        var address = loopback(port: 0)
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0
            }
        }
        guard bound else {
            close(fd)
            throw TestFailure("proxy: bind failed, errno \(errno)")
        }
        listener = fd
        port = Int(UInt16(bigEndian: address.sin_port))
    }

    /// Every request so far, in the order the server answered them.
    var exchanges: [Exchange] { locked { log } }

    /// What `onLoss` threw, if it did.
    var lossFailure: (any Error)? { locked { lossError } }

    /// Starts listening and relaying.
    func start() {
        listen(listener, 16)
        Thread.detachNewThread { [self] in
            while true {
                let fd = accept(listener, nil, nil)
                if fd < 0 {
                    if errno == EINTR { continue }
                    return
                }
                // Not inherited by the server the test restarts: a close here must close the connection.
                _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
                locked { _ = sockets.insert(fd) }
                Thread.detachNewThread { [self] in relay(fd) }
            }
        }
    }

    /// Stops accepting and closes every connection.
    func stop() {
        shutdown(listener, Int32(SHUT_RDWR))
        locked { for fd in sockets { shutdown(fd, Int32(SHUT_RDWR)) } }
    }

    deinit { close(listener) }

    /// One client connection: its requests in turn, over one connection to the server.
    private func relay(_ clientFD: Int32) {
        let client = MessageSocket(fd: clientFD)
        var server: MessageSocket?
        defer {
            for fd in [clientFD, server?.fd].compactMap({ $0 }) {
                locked { _ = sockets.remove(fd) }
                shutdown(fd, Int32(SHUT_RDWR))
                close(fd)
            }
        }
        while let request = client.readMessage() {
            if server == nil {
                guard let fd = connectUpstream() else { return }
                locked { _ = sockets.insert(fd) }
                server = MessageSocket(fd: fd)
            }
            guard let server, server.write(request.bytes), let answer = server.readMessage() else { return }
            let line = request.lines[0].replacingOccurrences(of: " HTTP/1.1", with: "")
            let lose: Bool = locked {
                if line == "POST /v1/events" { eventRequests += 1 }
                let lose = line == "POST /v1/events" && eventRequests == losing
                log.append(
                    Exchange(
                        line: line, idempotencyKey: request.header("Idempotency-Key"),
                        status: Int(answer.lines[0].split(separator: " ").dropFirst().first ?? "") ?? 0,
                        replayed: answer.header("Idempotent-Replayed") == "true", relayed: !lose))
                return lose
            }
            if lose {
                do { try onLoss() } catch { locked { lossError = error } }
                return
            }
            guard client.write(answer.bytes), answer.header("Connection")?.lowercased() != "close" else { return }
        }
    }

    private func connectUpstream() -> Int32? {
        guard let fd = connectLoopback(port: upstreamPort) else { return nil }
        // Not inherited by the server the test restarts, as for the client side.
        _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
        return fd
    }

    private func locked<T>(_ body: () throws -> T) rethrows -> T {
        lock.lock()
        defer { lock.unlock() }
        return try body()
    }
}

private func loopback(port: Int) -> sockaddr_in {
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = in_port_t(UInt16(port).bigEndian)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    return address
}

/// One HTTP/1.1 message: its head's lines and all its bytes (framed by `Content-Length`, as both
/// the SDK and the server frame theirs).
struct HTTPMessage {
    var lines: [String]
    var bytes: [UInt8]

    func header(_ name: String) -> String? {
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":"), line[..<colon].lowercased() == name.lowercased() else {
                continue
            }
            return line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        return nil
    }
}

/// A blocking socket read and written a whole HTTP message at a time.
final class MessageSocket {
    let fd: Int32
    private var buffer: [UInt8] = []

    init(fd: Int32) { self.fd = fd }

    /// The next message; nil when the peer closes (or the socket fails) first.
    func readMessage() -> HTTPMessage? {
        var headEnd = 0
        while true {
            if let end = endOfHead() {
                headEnd = end
                break
            }
            guard fill() else { return nil }
        }
        var message = HTTPMessage(
            lines: String(decoding: buffer[..<(headEnd - 4)], as: UTF8.self).components(separatedBy: "\r\n"),
            bytes: [])
        let end = headEnd + (Int(message.header("Content-Length") ?? "0") ?? 0)
        while buffer.count < end {
            guard fill() else { return nil }
        }
        message.bytes = Array(buffer[..<end])
        buffer.removeFirst(end)
        return message
    }

    func write(_ bytes: [UInt8]) -> Bool {
        var offset = 0
        while offset < bytes.count {
            let sent = bytes[offset...].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard sent > 0 else { return false }
            offset += sent
        }
        return true
    }

    /// The index just past the head's blank line, once it has arrived.
    private func endOfHead() -> Int? {
        guard buffer.count >= 4 else { return nil }
        for index in 0...(buffer.count - 4) where buffer[index..<(index + 4)].elementsEqual([13, 10, 13, 10]) {
            return index + 4
        }
        return nil
    }

    private func fill() -> Bool {
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        let count = read(fd, &chunk, chunk.count)
        guard count > 0 else { return false }
        buffer += chunk[..<count]
        return true
    }
}

import Glibc

/// Sends one webhook POST and reports the response status. The worker depends on this alone,
/// so tests use a fake and the TLS client plugs in without the worker changing.
package protocol DeliveryTransport: Sendable {
    /// POSTs `body` to `url` with `headers`; returns the status code.
    /// - Throws: when no status arrived within `timeout` (refused, reset, timed out, bad answer).
    func post(url: String, headers: [(String, String)], body: [UInt8], timeout: Duration) throws -> Int
}

/// A failed send: what went wrong, for the delivery's `error` field (never a secret).
package struct TransportError: Error, Sendable, CustomStringConvertible {
    package var description: String
    package init(_ description: String) { self.description = description }
}

/// Plain `http://` over a blocking socket with deadlines, reading only the status line.
///
/// A stand-in until the TLS client lands: it refuses `https://`, which the worker then
/// records as a failed attempt.
package struct PlainHTTPTransport: DeliveryTransport {
    /// Most response bytes read while looking for the status line.
    static let maxResponseBytes = 4096

    package init() {}

    package func post(url: String, headers: [(String, String)], body: [UInt8], timeout: Duration) throws -> Int {
        guard let destination = WebhookDestination(url: url) else { throw TransportError("not an http(s) URL") }
        guard !destination.secure else { throw TransportError("https is not available in this build") }
        let deadline =
            Self.nowMillis() + timeout.components.seconds * 1000
            + timeout.components.attoseconds / 1_000_000_000_000_000
        let fd = try connect(destination, deadline: deadline)
        defer { close(fd) }
        var head = "POST \(destination.target) HTTP/1.1\r\n"
        let hostHeader = destination.host.contains(":") ? "[\(destination.host)]" : destination.host
        head += "Host: \(hostHeader):\(destination.port)\r\n"
        head += "Content-Length: \(body.count)\r\nConnection: close\r\n"
        for (name, value) in headers { head += "\(name): \(value)\r\n" }
        head += "\r\n"
        try send(fd, Array(head.utf8) + body, deadline: deadline)
        return try readStatus(fd, deadline: deadline)
    }

    private func connect(_ destination: WebhookDestination, deadline: Int64) throws -> Int32 {
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(destination.host, String(destination.port), &hints, &list) == 0, let first = list else {
            throw TransportError("\(destination.host) does not resolve")
        }
        defer { freeaddrinfo(first) }
        var node: UnsafeMutablePointer<addrinfo>? = first
        var lastError = "no address"
        while let info = node?.pointee {
            node = info.ai_next
            let fd = socket(info.ai_family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
            guard fd >= 0 else { continue }
            if Glibc.connect(fd, info.ai_addr, info.ai_addrlen) == 0 { return fd }
            if errno == EINPROGRESS, wait(fd, events: Int16(POLLOUT), deadline: deadline) {
                var error: Int32 = 0
                var length = socklen_t(MemoryLayout<Int32>.size)
                getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length)
                if error == 0 { return fd }
                lastError = String(cString: strerror(error))
            } else {
                lastError = errno == EINPROGRESS ? "connect timed out" : String(cString: strerror(errno))
            }
            close(fd)
        }
        throw TransportError("connect failed: \(lastError)")
    }

    private func send(_ fd: Int32, _ bytes: [UInt8], deadline: Int64) throws {
        var offset = 0
        while offset < bytes.count {
            let n = bytes[offset...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if n > 0 {
                offset += n
            } else if n < 0 && (errno == EAGAIN || errno == EINTR) {
                guard wait(fd, events: Int16(POLLOUT), deadline: deadline) else {
                    throw TransportError("send timed out")
                }
            } else {
                throw TransportError("send failed: \(String(cString: strerror(errno)))")
            }
        }
    }

    /// Reads until `HTTP/1.x NNN` is complete; 1xx interim answers are not expected from a POST
    /// without `Expect`, so the first status line is the answer.
    private func readStatus(_ fd: Int32, deadline: Int64) throws -> Int {
        var received: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 1024)
        while received.count < Self.maxResponseBytes {
            if let lineEnd = received.firstIndex(of: 10) {
                let line = String(decoding: received[..<lineEnd], as: UTF8.self)
                let parts = line.split(separator: " ", maxSplits: 2)
                guard parts.count >= 2, parts[0].hasPrefix("HTTP/1."), parts[1].utf8.count == 3,
                    let status = Int(parts[1]), (100...599).contains(status)
                else { throw TransportError("not an HTTP/1.1 status line") }
                return status
            }
            let n = recv(fd, &chunk, chunk.count, 0)
            if n > 0 {
                received += chunk[0..<n]
            } else if n == 0 {
                throw TransportError("connection closed before a status line")
            } else if errno == EAGAIN || errno == EINTR {
                guard wait(fd, events: Int16(POLLIN), deadline: deadline) else {
                    throw TransportError("no answer within the timeout")
                }
            } else {
                throw TransportError("recv failed: \(String(cString: strerror(errno)))")
            }
        }
        throw TransportError("status line too long")
    }

    /// Waits for `events` until the deadline; false on timeout.
    private func wait(_ fd: Int32, events: Int16, deadline: Int64) -> Bool {
        while true {
            let left = deadline - Self.nowMillis()
            guard left > 0 else { return false }
            var entry = pollfd(fd: fd, events: events, revents: 0)
            let n = poll(&entry, 1, Int32(min(left, 1000)))
            if n > 0 { return true }
            if n < 0 && errno != EINTR { return false }
        }
    }

    static func nowMillis() -> Int64 {
        var spec = timespec()
        clock_gettime(CLOCK_MONOTONIC, &spec)
        return Int64(spec.tv_sec) * 1000 + Int64(spec.tv_nsec) / 1_000_000
    }
}

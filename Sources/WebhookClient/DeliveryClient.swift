import Glibc
import HTTP1
import Reactor
import Threads

/// A small blocking HTTP/1.1 client for webhook deliveries: one `POST`, read the status line,
/// close. `http://` and `https://` (OpenSSL's libssl, certificate and host name verified).
///
/// One request per call and per connection (`Connection: close`): deliveries go to many
/// hosts, rarely twice in a row to the same one, so there is nothing worth keeping open.
/// Every wait is a `poll` against one deadline, so a peer that accepts and never answers
/// costs at most the timeout. Name resolution (`getaddrinfo`) is the one step that cannot be
/// bounded by it; run deliveries on their own thread.
///
/// ```swift
/// let client = try DeliveryClient()
/// let status = try client.post(url: "https://example.com/hooks", headers: headers, body: body,
///                              timeout: .seconds(15))
/// ```
package struct DeliveryClient: WebhookTransport {
    /// The client's limits and trust; the defaults are API.md §14's.
    package struct Configuration: Sendable {
        /// Connecting and the TLS handshake together, capped by the call's own timeout.
        package var connectTimeout: Duration = .seconds(15)
        /// How much of the answer is read while looking for the status line; the rest is never read.
        package var maxResponseBytes = 4096
        /// The CAs server certificates must chain to.
        package var trust: TrustRoots = .system
        /// Sent as `User-Agent` unless the caller's headers carry one.
        package var userAgent = "BuzzKit-Webhooks/1"
        /// Asked for every resolved address before connecting; `false` skips it. The delivery
        /// worker refuses private networks here (API.md §14), on the address actually used.
        package var allowsAddress: @Sendable (ResolvedAddress) -> Bool = { _ in true }

        package init() {}
    }

    private let configuration: Configuration
    private let tls: TLSContext

    /// A client; the trust store is loaded now, so a broken one fails here and not per delivery.
    /// - Throws: ``WebhookClientError`` of kind `tlsFailed` if the CAs cannot be loaded.
    package init(configuration: Configuration = Configuration()) throws {
        self.configuration = configuration
        self.tls = try TLSContext(trust: configuration.trust)
        // libssl writes with write(2), not send(MSG_NOSIGNAL): a peer that hangs up mid-request
        // must be an error, not a SIGPIPE that ends the process. `buzzkit serve` ignores it too.
        signal(SIGPIPE, SIG_IGN)
    }

    package func post(url: String, headers: [(String, String)], body: [UInt8], timeout: Duration) throws -> Int {
        let target = try DeliveryURL(url)
        let request = try Self.request(to: target, headers: headers, body: body, userAgent: configuration.userAgent)
        let start = monotonicNanoseconds()
        let deadline = start &+ timeout.nanoseconds
        let connectDeadline = min(deadline, start &+ configuration.connectTimeout.nanoseconds)

        let fd = try connect(to: target, deadline: connectDeadline)
        defer { Socket.close(fd) }
        var stream = Stream(fd: fd, host: target.host)
        if target.isTLS {
            let session = try TLSSession(
                context: tls, fd: fd, host: target.host, hostIsIPLiteral: target.hostIsIPLiteral)
            while let wait = try session.handshake() {
                try Stream.poll(fd, for: wait, until: connectDeadline, doing: "TLS handshake with \(target.host)")
            }
            stream.tls = session
        }
        try stream.writeAll(request, until: deadline)
        return try readStatus(from: &stream, until: deadline)
    }

    // MARK: - Request bytes

    /// The request head and body. Caller headers are checked so none can add a field or a request.
    static func request(to url: DeliveryURL, headers: [(String, String)], body: [UInt8], userAgent: String) throws
        -> [UInt8]
    {
        // These describe the message framing, which is ours to write.
        let reserved: Set<String> = ["host", "content-length", "transfer-encoding", "connection"]
        var head = "POST \(url.target) HTTP/1.1\r\nHost: \(url.hostField)\r\n"
        var hasUserAgent = false
        for (name, value) in headers {
            guard HTTPFieldSyntax.isValidName(name), HTTPFieldSyntax.isValidValue(value) else {
                throw WebhookClientError(.invalidHeader, "header \(name.debugDescription) is not a valid field")
            }
            let lowered = name.lowercased()
            guard !reserved.contains(lowered) else {
                throw WebhookClientError(.invalidHeader, "header \(name) is set by the client")
            }
            if lowered == "user-agent" { hasUserAgent = true }
            head += "\(name): \(value)\r\n"
        }
        if !hasUserAgent { head += "User-Agent: \(userAgent)\r\n" }
        head += "Content-Length: \(body.count)\r\nConnection: close\r\n\r\n"
        return Array(head.utf8) + body
    }

    // MARK: - Connecting

    /// A connected non-blocking socket to the first address of `url.host` that is allowed and answers.
    private func connect(to url: DeliveryURL, deadline: UInt64) throws -> Int32 {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        hints.ai_flags = AI_NUMERICSERV
        var list: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(url.host, String(url.port), &hints, &list)
        guard status == 0, let first = list else {
            throw WebhookClientError(
                .resolveFailed, "cannot resolve \(url.host): \(String(cString: gai_strerror(status)))")
        }
        defer { freeaddrinfo(first) }

        var failures: [String] = []
        var refused: [String] = []
        var entry: UnsafeMutablePointer<addrinfo>? = first
        while let current = entry {
            entry = current.pointee.ai_next
            guard let address = Self.address(of: current.pointee) else { continue }
            guard configuration.allowsAddress(address) else {
                refused.append(address.description)
                continue
            }
            let fd = try blockingSyscall("socket") {
                Glibc.socket(
                    current.pointee.ai_family,
                    Int32(SOCK_STREAM.rawValue | SOCK_NONBLOCK.rawValue | SOCK_CLOEXEC.rawValue), 0)
            }
            do {
                try Self.connect(fd, current.pointee, deadline: deadline, name: "\(url.host) (\(address))")
                return fd
            } catch let error as WebhookClientError where error.kind == .connectFailed {
                Socket.close(fd)
                failures.append(error.message)
            } catch {
                Socket.close(fd)
                throw error
            }
        }
        if failures.isEmpty, !refused.isEmpty {
            throw WebhookClientError(
                .addressRefused, "\(url.host) resolves to \(refused.joined(separator: ", ")), which is not allowed")
        }
        throw WebhookClientError(
            .connectFailed, failures.isEmpty ? "no address for \(url.host)" : failures.joined(separator: "; "))
    }

    /// `connect` without blocking: `EINPROGRESS`, then `poll` for writability and `SO_ERROR`.
    private static func connect(_ fd: Int32, _ info: addrinfo, deadline: UInt64, name: String) throws {
        do {
            try blockingSyscall("connect") { Glibc.connect(fd, info.ai_addr, info.ai_addrlen) }
            return
        } catch let error as SystemError where error.errno == EINPROGRESS {
            // The usual case for a non-blocking socket: wait below.
        } catch let error as SystemError {
            throw WebhookClientError(.connectFailed, "connect to \(name): \(String(cString: strerror(error.errno)))")
        }
        try Stream.poll(fd, for: .writable, until: deadline, doing: "connect to \(name)")
        var socketError: Int32 = 0
        var length = socklen_t(MemoryLayout<Int32>.size)
        try blockingSyscall("getsockopt") { getsockopt(fd, SOL_SOCKET, SO_ERROR, &socketError, &length) }
        guard socketError == 0 else {
            throw WebhookClientError(.connectFailed, "connect to \(name): \(String(cString: strerror(socketError)))")
        }
    }

    private static func address(of info: addrinfo) -> ResolvedAddress? {
        guard let raw = info.ai_addr else { return nil }
        switch info.ai_family {
        case AF_INET:
            return raw.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { pointer in
                withUnsafeBytes(of: pointer.pointee.sin_addr) { ResolvedAddress(bytes: Array($0)) }
            }
        case AF_INET6:
            return raw.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { pointer in
                withUnsafeBytes(of: pointer.pointee.sin6_addr) { ResolvedAddress(bytes: Array($0)) }
            }
        default:
            return nil
        }
    }

    // MARK: - The answer

    /// Reads until a final (non-1xx) status line, at most `maxResponseBytes`, and returns its code.
    private func readStatus(from stream: inout Stream, until deadline: UInt64) throws -> Int {
        var received: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 1024)
        while true {
            switch StatusLine.parse(received) {
            case .complete(let code, _, let consumed):
                guard (100...199).contains(code) else { return code }
                // An interim answer (RFC 9110 §15.2): skip its head and read on for the final one.
                guard let end = Self.endOfHead(received, from: consumed) else { break }
                received.removeFirst(end)
                continue
            case .invalid(let reason):
                throw WebhookClientError(.invalidResponse, "\(stream.host) did not answer HTTP/1.x: \(reason)")
            case .needMore:
                break
            }
            guard received.count < configuration.maxResponseBytes else {
                throw WebhookClientError(
                    .invalidResponse, "no status line in the first \(configuration.maxResponseBytes) bytes")
            }
            let room = min(chunk.count, configuration.maxResponseBytes - received.count)
            let count = try chunk.withUnsafeMutableBytes {
                try stream.read(into: UnsafeMutableRawBufferPointer(rebasing: $0[..<room]), until: deadline)
            }
            guard count > 0 else {
                throw WebhookClientError(.connectionClosed, "\(stream.host) closed the connection before a status line")
            }
            received.append(contentsOf: chunk[..<count])
        }
    }

    /// The index just past the `CRLF CRLF` that ends a head whose field lines start at `start`.
    private static func endOfHead(_ bytes: [UInt8], from start: Int) -> Int? {
        if bytes.count >= start + 2, bytes[start] == 0x0D, bytes[start + 1] == 0x0A { return start + 2 }
        var index = start
        while index + 3 < bytes.count {
            if bytes[index] == 0x0D, bytes[index + 1] == 0x0A, bytes[index + 2] == 0x0D, bytes[index + 3] == 0x0A {
                return index + 4
            }
            index += 1
        }
        return nil
    }
}

// MARK: - One connection's byte stream, plain or TLS

/// Reads and writes on the socket, through TLS when there is a session, each waiting against a deadline.
private struct Stream {
    let fd: Int32
    let host: String
    var tls: TLSSession?

    init(fd: Int32, host: String) {
        self.fd = fd
        self.host = host
    }

    mutating func writeAll(_ bytes: [UInt8], until deadline: UInt64) throws {
        var offset = 0
        while offset < bytes.count {
            let step = try bytes.withUnsafeBytes { raw -> Result<Int, TLSSession.WaitError> in
                let rest = UnsafeRawBufferPointer(rebasing: raw[offset...])
                if let tls { return try tls.write(rest) }
                do {
                    switch try Socket.write(fd, rest) {
                    case .processed(let count): return .success(count)
                    case .wouldBlock: return .failure(TLSSession.WaitError(wait: .writable))
                    }
                } catch let error as SystemError {
                    throw WebhookClientError(.ioFailed, "sending to \(host): \(String(cString: strerror(error.errno)))")
                }
            }
            switch step {
            case .success(let count): offset += count
            case .failure(let pending):
                try Self.poll(fd, for: pending.wait, until: deadline, doing: "sending to \(host)")
            }
        }
    }

    mutating func read(into buffer: UnsafeMutableRawBufferPointer, until deadline: UInt64) throws -> Int {
        while true {
            let step: Result<Int, TLSSession.WaitError>
            if let tls {
                step = try tls.read(into: buffer)
            } else {
                do {
                    switch try Socket.read(fd, into: buffer) {
                    case .processed(let count): step = .success(count)
                    case .wouldBlock: step = .failure(TLSSession.WaitError(wait: .readable))
                    }
                } catch let error as SystemError where error.errno == ECONNRESET {
                    return 0
                } catch let error as SystemError {
                    throw WebhookClientError(
                        .ioFailed, "reading from \(host): \(String(cString: strerror(error.errno)))")
                }
            }
            switch step {
            case .success(let count): return count
            case .failure(let pending):
                try Self.poll(fd, for: pending.wait, until: deadline, doing: "waiting for \(host) to answer")
            }
        }
    }

    /// Waits until `fd` is ready for `wait`, or throws `timedOut` once `deadline` has passed.
    static func poll(_ fd: Int32, for wait: TLSSession.Wait, until deadline: UInt64, doing step: String) throws {
        while true {
            let now = monotonicNanoseconds()
            guard now < deadline else { throw WebhookClientError(.timedOut, "timed out \(step)") }
            // Round up, so a wait never ends a hair before the deadline and spins.
            let milliseconds = Int32(min((deadline - now + 999_999) / 1_000_000, UInt64(Int32.max)))
            var descriptor = pollfd(fd: fd, events: Int16(wait == .readable ? POLLIN : POLLOUT), revents: 0)
            let ready = try blockingSyscall("poll") { Glibc.poll(&descriptor, 1, milliseconds) }
            // Errors and hang-ups count as ready: the next read, write or SO_ERROR reports them.
            if ready > 0 { return }
        }
    }
}

import CLinux
import Glibc

/// Raw socket calls on non-blocking stream sockets, each through `syscall`.
package enum Socket {
    /// Reads into `buffer`. `.processed(0)` is end of stream.
    package static func read(_ fd: Int32, into buffer: UnsafeMutableRawBufferPointer) throws -> IOResult<Int> {
        try syscall("read") { Glibc.read(fd, buffer.baseAddress, buffer.count) }
    }

    /// Writes what the kernel takes now; `MSG_NOSIGNAL` turns a closed peer into `EPIPE`
    /// instead of a process-killing `SIGPIPE`.
    package static func write(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) throws -> IOResult<Int> {
        try syscall("send") { Glibc.send(fd, bytes.baseAddress, bytes.count, Int32(MSG_NOSIGNAL)) }
    }

    /// Gathers several buffers into one write (`sendmsg`, again without `SIGPIPE`).
    package static func writev(_ fd: Int32, _ buffers: [UnsafeRawBufferPointer]) throws -> IOResult<Int> {
        var iovecs = buffers.map {
            iovec(iov_base: UnsafeMutableRawPointer(mutating: $0.baseAddress), iov_len: $0.count)
        }
        return try iovecs.withUnsafeMutableBufferPointer { vectors in
            var message = msghdr()
            message.msg_iov = vectors.baseAddress
            message.msg_iovlen = vectors.count
            return try syscall("sendmsg") { Glibc.sendmsg(fd, &message, Int32(MSG_NOSIGNAL)) }
        }
    }

    /// Closes the fd. Errors from close on a socket are not actionable (the fd is gone either way).
    package static func close(_ fd: Int32) {
        _ = Glibc.close(fd)
    }

    /// Disables Nagle: responses are written whole, and waiting for an ACK only adds latency.
    package static func setNoDelay(_ fd: Int32) throws {
        var on: Int32 = 1
        try blockingSyscall("setsockopt") {
            setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &on, socklen_t(MemoryLayout<Int32>.size))
        }
    }

    /// The CPU the kernel last handled the socket's incoming packets on (`SO_INCOMING_CPU`,
    /// socket(7)), or nil when it does not say. For a local client that is the CPU its thread
    /// sent from; for a remote one, the CPU of the receive queue the NIC chose.
    package static func incomingCPU(_ fd: Int32) -> Int? {
        var cpu: Int32 = -1
        var size = socklen_t(MemoryLayout<Int32>.size)
        guard getsockopt(fd, SOL_SOCKET, SO_INCOMING_CPU, &cpu, &size) == 0, cpu >= 0 else { return nil }
        return Int(cpu)
    }

    /// Shuts down our sending side so the peer sees end of stream after the last bytes.
    package static func shutdownWrite(_ fd: Int32) {
        _ = Glibc.shutdown(fd, Int32(SHUT_WR))
    }
}

/// A listening IPv4 TCP socket: non-blocking, `SO_REUSEADDR`, `accept4` with
/// `SOCK_NONBLOCK | SOCK_CLOEXEC`. Owns its fd.
///
/// ```swift
/// let listener = try ListeningSocket(host: "127.0.0.1", port: 0)
/// print(listener.port)   // the port the kernel picked
/// ```
package final class ListeningSocket {
    /// The listening fd.
    package let fd: Int32
    /// The bound port (useful after binding port 0).
    package let port: Int
    private var reserveFD: Int32
    private var closed = false

    /// Binds and listens.
    /// - Parameters:
    ///   - host: dotted IPv4 address, e.g. `"127.0.0.1"` or `"0.0.0.0"`.
    ///   - port: TCP port; 0 lets the kernel choose.
    ///   - backlog: the kernel's accept queue length.
    package init(host: String, port: Int, backlog: Int32 = 1024) throws {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(truncatingIfNeeded: port).bigEndian)
        guard inet_pton(AF_INET, host, &address.sin_addr) == 1 else {
            throw SystemError(errno: EINVAL, call: "inet_pton(\(host))")
        }
        let fd = try blockingSyscall("socket") {
            Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue | SOCK_NONBLOCK.rawValue | SOCK_CLOEXEC.rawValue), 0)
        }
        do {
            var on: Int32 = 1
            try blockingSyscall("setsockopt") {
                setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, socklen_t(MemoryLayout<Int32>.size))
            }
            _ = try withUnsafePointer(to: &address) { pointer in
                try pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { raw in
                    try blockingSyscall("bind") { Glibc.bind(fd, raw, socklen_t(MemoryLayout<sockaddr_in>.size)) }
                }
            }
            try blockingSyscall("listen") { Glibc.listen(fd, backlog) }
            var bound = sockaddr_in()
            var length = socklen_t(MemoryLayout<sockaddr_in>.size)
            _ = try withUnsafeMutablePointer(to: &bound) { pointer in
                try pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { raw in
                    try blockingSyscall("getsockname") { getsockname(fd, raw, &length) }
                }
            }
            self.fd = fd
            self.port = Int(UInt16(bigEndian: bound.sin_port))
        } catch {
            Glibc.close(fd)
            throw error
        }
        reserveFD = Self.openReserve()
    }

    deinit { close() }

    /// Closes the listening fd (and the reserve). Idempotent.
    package func close() {
        guard !closed else { return }
        closed = true
        Glibc.close(fd)
        if reserveFD >= 0 { Glibc.close(reserveFD) }
    }

    /// The outcome of one accept.
    package enum Accepted {
        /// A new connection's fd, non-blocking and close-on-exec.
        case connection(Int32)
        /// Nothing pending.
        case none
        /// Out of fds: one pending connection was taken and closed to clear the queue.
        case shedForFDExhaustion
        /// Out of fds and no reserve left: stop accepting for a while to avoid spinning.
        case fdExhausted
    }

    /// Accepts one pending connection.
    package func accept() throws -> Accepted {
        while true {
            do {
                switch try syscall(
                    "accept4", { buzzkit_accept4(fd, nil, nil, Int32(SOCK_NONBLOCK.rawValue | SOCK_CLOEXEC.rawValue)) })
                {
                case .processed(let connection): return .connection(connection)
                case .wouldBlock: return .none
                }
            } catch let error as SystemError {
                switch error.errno {
                case ECONNABORTED, EPROTO:
                    // The peer left before we accepted: not our problem, try the next one.
                    continue
                case EMFILE, ENFILE:
                    // Level-triggered epoll would report the listener forever. Free the reserve
                    // fd, accept and drop the connection, then take the reserve back
                    // (the classic reserve-fd trick).
                    guard reserveFD >= 0 else { return .fdExhausted }
                    Glibc.close(reserveFD)
                    reserveFD = -1
                    let shed = buzzkit_accept4(fd, nil, nil, Int32(SOCK_CLOEXEC.rawValue))
                    if shed >= 0 { Glibc.close(shed) }
                    reserveFD = Self.openReserve()
                    return shed >= 0 ? .shedForFDExhaustion : .fdExhausted
                default:
                    throw error
                }
            }
        }
    }

    private static func openReserve() -> Int32 {
        open("/dev/null", O_RDONLY | O_CLOEXEC)
    }
}

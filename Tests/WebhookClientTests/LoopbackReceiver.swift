import Foundation
import Glibc

/// A plain-HTTP receiver on 127.0.0.1 for the client's tests: accepts connections on a thread
/// and hands each accepted fd to `handler`, which decides what (if anything) to answer.
final class LoopbackReceiver: @unchecked Sendable {
    let port: Int
    private let fd: Int32
    private let lock = NSLock()
    private var requests: [[UInt8]] = []

    init(handler: @escaping @Sendable (Int32, LoopbackReceiver) -> Void) throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        self.fd = fd
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        _ = listen(fd, 16)
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        port = Int(UInt16(bigEndian: address.sin_port))
        let listener = fd
        guard bound == 0 else { throw POSIXError(.EADDRINUSE) }
        Thread.detachNewThread { [self] in
            while true {
                let client = accept(listener, nil, nil)
                if client < 0 { return }  // closed by deinit
                Thread.detachNewThread { handler(client, self) }
            }
        }
    }

    deinit {
        shutdown(fd, Int32(SHUT_RDWR))
        close(fd)
    }

    /// Every request read by ``readRequest(_:)`` so far.
    var received: [[UInt8]] {
        lock.lock()
        defer { lock.unlock() }
        return requests
    }

    /// Reads one request (head and `Content-Length` body) from `client` and records it.
    func readRequest(_ client: Int32) -> [UInt8] {
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            if let end = Self.find(Array("\r\n\r\n".utf8), in: bytes) {
                let head = String(decoding: bytes[..<end], as: UTF8.self).lowercased()
                let length =
                    head.split(separator: "\r\n").first { $0.hasPrefix("content-length:") }
                    .flatMap { Int($0.dropFirst("content-length:".count).trimmingCharacters(in: .whitespaces)) } ?? 0
                if bytes.count >= end + 4 + length { break }
            }
            let count = read(client, &chunk, chunk.count)
            if count <= 0 { break }
            bytes += chunk[..<count]
        }
        lock.lock()
        requests.append(bytes)
        lock.unlock()
        return bytes
    }

    /// Writes `text` whole to `client`.
    static func send(_ text: String, to client: Int32) {
        let bytes = Array(text.utf8)
        var offset = 0
        while offset < bytes.count {
            let written = bytes[offset...].withUnsafeBytes { write(client, $0.baseAddress, $0.count) }
            if written <= 0 { return }
            offset += written
        }
    }

    static func find(_ needle: [UInt8], in haystack: [UInt8]) -> Int? {
        guard haystack.count >= needle.count else { return nil }
        for index in 0...(haystack.count - needle.count) where Array(haystack[index..<index + needle.count]) == needle {
            return index
        }
        return nil
    }
}

/// A free loopback port with nothing listening on it (bound, then closed).
func closedLoopbackPort() -> Int {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    defer { close(fd) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    _ = withUnsafeMutablePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
            _ = bind(fd, pointer, length)
            return getsockname(fd, pointer, &length)
        }
    }
    return Int(UInt16(bigEndian: address.sin_port))
}

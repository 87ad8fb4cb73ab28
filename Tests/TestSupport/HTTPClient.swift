import Foundation
import Glibc

/// A small blocking HTTP/1.1 client over one keep-alive socket, so tests see exactly what the
/// server wrote (no client library rewriting headers or retrying).
package final class HTTPClient: @unchecked Sendable {
    package struct Response: Sendable {
        package var status: Int
        package var headers: [(name: String, value: String)]
        package var body: [UInt8]

        package func header(_ name: String) -> String? {
            headers.first { $0.name.lowercased() == name.lowercased() }?.value
        }
        package var text: String { String(decoding: body, as: UTF8.self) }
        /// The body parsed as a JSON object, if it is one.
        package var json: [String: Any]? {
            (try? JSONSerialization.jsonObject(with: Data(body))) as? [String: Any]
        }
        /// `data` of the envelope.
        package var data: [String: Any]? { json?["data"] as? [String: Any] }
        /// `error.code` of the envelope.
        package var errorCode: String? { (json?["error"] as? [String: Any])?["code"] as? String }
        package var warnings: [String] {
            ((json?["metadata"] as? [String: Any])?["warnings"] as? [[String: Any]] ?? []).compactMap {
                $0["code"] as? String
            }
        }
    }

    package let port: Int
    private var fd: Int32 = -1
    private var buffer: [UInt8] = []
    package var timeoutSeconds: Int

    package init(port: Int, timeoutSeconds: Int = 30) throws {
        self.port = port
        self.timeoutSeconds = timeoutSeconds
        try connect()
    }

    deinit { close() }

    package func connect() throws {
        close()
        guard let connected = connectLoopback(port: port) else {
            throw TestFailure("connect to \(port): errno \(errno)")
        }
        fd = connected
        var tv = timeval(tv_sec: timeoutSeconds, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        buffer = []
    }

    package func close() {
        if fd >= 0 { Glibc.close(fd) }
        fd = -1
    }

    /// Writes raw bytes as they are.
    package func write(_ bytes: [UInt8]) throws {
        var offset = 0
        while offset < bytes.count {
            let n = bytes[offset...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard n > 0 else { throw TestFailure("send: errno \(errno)") }
            offset += n
        }
    }

    package func write(_ text: String) throws { try write(Array(text.utf8)) }

    /// Sends a request with a JSON body (any JSONSerialization value) and reads the response.
    package func send(
        _ method: String, _ path: String, json: Any? = nil, headers: [String: String] = [:]
    ) throws -> Response {
        var body: [UInt8] = []
        var allHeaders = headers
        if let json {
            body = Array(try JSONSerialization.data(withJSONObject: json, options: [.fragmentsAllowed]))
            if allHeaders["Content-Type"] == nil { allHeaders["Content-Type"] = "application/json" }
        }
        return try send(method, path, body: body, headers: allHeaders)
    }

    package func send(_ method: String, _ path: String, body: [UInt8], headers: [String: String] = [:]) throws
        -> Response
    {
        var head = "\(method) \(path) HTTP/1.1\r\nHost: localhost\r\n"
        for (name, value) in headers { head += "\(name): \(value)\r\n" }
        if !body.isEmpty || ["POST", "PUT", "PATCH"].contains(method) { head += "Content-Length: \(body.count)\r\n" }
        head += "\r\n"
        try write(Array(head.utf8) + body)
        return try readResponse(method: method)
    }

    /// Reads one response (Content-Length or chunked, or to close).
    package func readResponse(method: String = "GET") throws -> Response {
        let headEnd = try readUntil([13, 10, 13, 10])
        let headText = String(decoding: buffer[..<headEnd], as: UTF8.self)
        buffer.removeFirst(headEnd + 4)
        var lines = headText.components(separatedBy: "\r\n")
        let statusLine = lines.removeFirst()
        let parts = statusLine.split(separator: " ")
        guard parts.count >= 2, let status = Int(parts[1]) else { throw TestFailure("bad status line: \(statusLine)") }
        var headers: [(String, String)] = []
        for line in lines {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers.append(
                (String(line[..<colon]), line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)))
        }
        var response = Response(status: status, headers: headers, body: [])
        if status == 100 { return response }
        if method == "HEAD" || status == 204 || status == 304 { return response }
        if let length = response.header("Content-Length").flatMap(Int.init) {
            try fill(length)
            response.body = Array(buffer[..<length])
            buffer.removeFirst(length)
        } else if response.header("Transfer-Encoding")?.lowercased() == "chunked" {
            throw TestFailure("chunked responses are not expected from buzzkit")
        } else {
            while try readMore() {}
            response.body = buffer
            buffer = []
        }
        if response.header("Content-Encoding") == "gzip" {
            response.body = try gunzip(response.body)
        }
        return response
    }

    /// True when the server closed the connection (reads EOF) within the timeout.
    package func isClosedByPeer() -> Bool {
        (try? readMore()) == false
    }

    private func readUntil(_ marker: [UInt8]) throws -> Int {
        var searchFrom = 0
        while true {
            if buffer.count >= marker.count {
                for i in searchFrom...(buffer.count - marker.count)
                where buffer[i..<(i + marker.count)].elementsEqual(marker) {
                    return i
                }
                searchFrom = max(0, buffer.count - marker.count + 1)
            }
            guard try readMore() else { throw TestFailure("connection closed before a full response") }
        }
    }

    private func fill(_ count: Int) throws {
        while buffer.count < count {
            guard try readMore() else { throw TestFailure("connection closed mid-body") }
        }
    }

    /// Reads what is available; false on EOF.
    @discardableResult
    private func readMore() throws -> Bool {
        var chunk = [UInt8](repeating: 0, count: 65536)
        let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        if n == 0 { return false }
        guard n > 0 else { throw TestFailure("recv: errno \(errno) (timeout?)") }
        buffer += chunk[0..<n]
        return true
    }
}

/// A blocking TCP socket connected to 127.0.0.1:`port`, or nil (errno says why).
package func connectLoopback(port: Int) -> Int32? {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { return nil }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = in_port_t(UInt16(port).bigEndian)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    let result = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
        }
    }
    guard result == 0 else {
        let saved = errno
        Glibc.close(fd)
        errno = saved
        return nil
    }
    return fd
}

/// Decompresses a gzip body with the system's gzip, which keeps the test client independent of
/// the server's own zlib code.
package func gunzip(_ bytes: [UInt8]) throws -> [UInt8] { try runGzip(["-dc"], input: bytes) }

/// Compresses with the system's gzip, for request bodies.
package func gzip(_ bytes: [UInt8]) throws -> [UInt8] { try runGzip(["-c"], input: bytes) }

private func runGzip(_ arguments: [String], input bytes: [UInt8]) throws -> [UInt8] {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/bin/gzip")
    process.arguments = arguments
    let input = Pipe()
    let output = Pipe()
    process.standardInput = input
    process.standardOutput = output
    try process.run()
    // Write from another thread: a large input would fill the pipe while gzip waits for us to read.
    let writer = Thread {
        input.fileHandleForWriting.write(Data(bytes))
        try? input.fileHandleForWriting.close()
    }
    writer.start()
    let data = output.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return Array(data)
}

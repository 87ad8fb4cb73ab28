import Foundation
import Glibc
import TestSupport
import XCTest

/// The outcome of one `buzzkit` command run to completion.
struct CommandResult {
    var status: Int32
    var stdout: String
    var stderr: String
}

/// Runs the real `buzzkit` binary with `arguments` and waits for it (30 s at most).
func runBuzzkit(_ arguments: [String], environment: [String: String] = [:], timeout: TimeInterval = 30) throws
    -> CommandResult
{
    try runProcess(TestServer.binaryPath, arguments, environment: environment, timeout: timeout)
}

func runProcess(
    _ executable: String, _ arguments: [String], environment: [String: String] = [:], timeout: TimeInterval = 30
) throws -> CommandResult {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: executable)
    process.arguments = arguments
    var env = ProcessInfo.processInfo.environment
    env["BUZZKIT_BOOTSTRAP_WORKSPACE_KEY"] = nil
    for (name, value) in environment { env[name] = value }
    process.environment = env
    // Files, not pipes: a chatty child cannot fill a pipe and block while we wait for it.
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("buzzkit-cmd-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: directory) }
    let outURL = directory.appendingPathComponent("out")
    let errURL = directory.appendingPathComponent("err")
    try Data().write(to: outURL)
    try Data().write(to: errURL)
    process.standardOutput = try FileHandle(forWritingTo: outURL)
    process.standardError = try FileHandle(forWritingTo: errURL)
    try process.run()
    let deadline = Date().addingTimeInterval(timeout)
    while process.isRunning && Date() < deadline { usleep(10_000) }
    if process.isRunning {
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        throw TestFailure("\(executable) \(arguments) did not finish in \(timeout) s")
    }
    process.waitUntilExit()
    return CommandResult(
        status: process.terminationStatus,
        stdout: (try? String(contentsOf: outURL, encoding: .utf8)) ?? "",
        stderr: (try? String(contentsOf: errURL, encoding: .utf8)) ?? "")
}

/// Runs SQL against a database file through python3's sqlite3 module (independent of the
/// server's own SQLite code); returns the rows, one a line, columns joined by `|`.
func sqlite(_ path: String, _ sql: String) throws -> String {
    let script = """
        import sqlite3, sys
        db = sqlite3.connect(sys.argv[1])
        rows = db.execute(sys.argv[2]).fetchall()
        db.commit()
        db.close()
        print("\\n".join("|".join(str(c) for c in r) for r in rows))
        """
    let result = try runProcess("/usr/bin/env", ["python3", "-c", script, path, sql])
    guard result.status == 0 else { throw TestFailure("python3 sqlite3 failed: \(result.stderr)") }
    return result.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
}

/// Open file descriptors of a process, from `/proc/<pid>/fd`.
func openFileDescriptors(_ pid: Int32) -> Int {
    (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd").count) ?? -1
}

/// The process's open sockets: the listener, the event loops' eventfds are not sockets, so this
/// counts exactly the connections it holds. Unlike the total it does not move when an idle
/// SQLite reader connection opens its WAL file on its first read.
func openSockets(_ pid: Int32) -> Int {
    let folder = "/proc/\(pid)/fd"
    guard let entries = try? FileManager.default.contentsOfDirectory(atPath: folder) else { return -1 }
    return entries.filter {
        (try? FileManager.default.destinationOfSymbolicLink(atPath: "\(folder)/\($0)"))?.hasPrefix("socket:") == true
    }.count
}

/// Polls `condition` every 20 ms until it holds or `seconds` pass.
@discardableResult
func eventually(_ seconds: Double = 5, _ condition: () -> Bool) -> Bool {
    let deadline = Date().addingTimeInterval(seconds)
    while Date() < deadline {
        if condition() { return true }
        usleep(20_000)
    }
    return condition()
}

/// Asserts `response` is an error envelope with `status` and `code`, and a request id that
/// matches the `X-Request-Id` header.
func assertErrorEnvelope(
    _ response: HTTPClient.Response, _ status: Int, _ code: String, file: StaticString = #filePath, line: UInt = #line
) {
    XCTAssertEqual(response.status, status, "status; body: \(response.text)", file: file, line: line)
    guard let json = response.json else {
        XCTFail("not JSON: \(response.text)", file: file, line: line)
        return
    }
    XCTAssertEqual(json["success"] as? Bool, false, file: file, line: line)
    XCTAssertTrue(json["data"] is NSNull, "data must be null", file: file, line: line)
    let error = json["error"] as? [String: Any]
    XCTAssertEqual(error?["code"] as? String, code, "error.code; body: \(response.text)", file: file, line: line)
    XCTAssertFalse((error?["message"] as? String ?? "").isEmpty, "error.message", file: file, line: line)
    XCTAssertNotNil(error?["details"] as? [String: Any], "error.details must be an object", file: file, line: line)
    let requestID = (json["metadata"] as? [String: Any])?["requestId"] as? String
    XCTAssertNotNil(requestID, "metadata.requestId", file: file, line: line)
    XCTAssertEqual(response.header("X-Request-Id"), requestID, "X-Request-Id header", file: file, line: line)
    XCTAssertTrue(response.header("Content-Type")?.hasPrefix("application/json") ?? false, file: file, line: line)
}

/// Asserts the response says `Connection: close` and the server really closed the socket.
func assertClosed(
    _ response: HTTPClient.Response, _ client: HTTPClient, file: StaticString = #filePath, line: UInt = #line
) {
    XCTAssertEqual(response.header("Connection")?.lowercased(), "close", "Connection: close", file: file, line: line)
    XCTAssertTrue(client.isClosedByPeer(), "the server must close the connection", file: file, line: line)
}

/// A JSON body as bytes.
func jsonBytes(_ value: Any) -> [UInt8] {
    Array((try? JSONSerialization.data(withJSONObject: value)) ?? Data())
}

/// A batch of `count` well-formed events.
func eventBatch(subscriberId: String, count: Int, prefix: String = "e") -> [String: Any] {
    [
        "subscriberId": subscriberId,
        "events": (0..<count).map { ["id": "\(prefix)\($0)", "name": "screen_view", "properties": ["n": $0]] },
    ]
}

/// Connects to `port`; nil when the connection is refused (nobody listening).
func tryConnect(_ port: Int) -> HTTPClient? {
    try? HTTPClient(port: port, timeoutSeconds: 5)
}

/// A bare TCP connection for tests that must not block on reads (the maxConnections and flood
/// tests): poll for readability, read to EOF, write ignoring a peer that already closed.
final class RawConnection {
    let fd: Int32

    init?(port: Int) {
        guard let fd = connectLoopback(port: port) else { return nil }
        self.fd = fd
    }

    deinit { Glibc.close(fd) }

    /// Writes everything it can; false if the peer is gone.
    @discardableResult
    func write(_ bytes: [UInt8]) -> Bool {
        var offset = 0
        while offset < bytes.count {
            let n = bytes[offset...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard n > 0 else { return false }
            offset += n
        }
        return true
    }

    func shutdownWrite() { Glibc.shutdown(fd, Int32(SHUT_WR)) }

    /// Whether bytes (or EOF) are waiting within `milliseconds`.
    func isReadable(within milliseconds: Int32) -> Bool {
        var descriptor = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        return poll(&descriptor, 1, milliseconds) > 0
    }

    /// Reads until EOF, an error, or `seconds` without progress.
    func readToEnd(seconds: Int32 = 5) -> (bytes: [UInt8], eof: Bool) {
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 16384)
        while isReadable(within: seconds * 1000) {
            let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n == 0 { return (bytes, true) }
            if n < 0 { return (bytes, errno == ECONNRESET) }
            bytes += chunk[0..<n]
        }
        return (bytes, false)
    }
}

/// The status code of the first response in `bytes`, if any.
func firstStatus(_ bytes: [UInt8]) -> Int? {
    let text = String(decoding: bytes.prefix(64), as: UTF8.self)
    guard text.hasPrefix("HTTP/1.") else { return nil }
    let parts = text.split(separator: " ")
    return parts.count > 1 ? Int(parts[1]) : nil
}

/// A value shared between test threads.
final class Locked<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Value
    init(_ value: Value) { self.value = value }
    func withLock<R>(_ body: (inout Value) -> R) -> R {
        lock.lock()
        defer { lock.unlock() }
        return body(&value)
    }
}

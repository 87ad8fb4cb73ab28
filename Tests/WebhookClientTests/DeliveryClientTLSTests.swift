import Foundation
import Glibc
import Reactor
import Testing
import Threads
import WebhookClient

/// A CA, a certificate it signed for `localhost` only, and a Python HTTPS receiver serving it.
///
/// Python's `ssl` and the `openssl` command are independent of our code, so a handshake that
/// passes here passes against a real TLS stack, and one that fails does so for the certificate.
private final class TLSReceiver {
    let directory: String
    let port: Int
    private let process: Process

    init() throws {
        directory = NSTemporaryDirectory() + "buzzkit-tls-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
        try Self.openssl(
            ["req", "-x509"] + ec + [
                "-keyout", "ca.key", "-out", "ca.pem", "-days", "2", "-subj", "/CN=BuzzKit Test CA",
                "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign",
            ], in: directory)
        try Self.openssl(
            ["req"] + ec + ["-keyout", "server.key", "-out", "server.csr", "-subj", "/CN=localhost"], in: directory)
        try "subjectAltName=DNS:localhost\n".write(toFile: directory + "/ext.cnf", atomically: true, encoding: .utf8)
        try Self.openssl(
            [
                "x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
                "-out", "server.pem", "-days", "2", "-extfile", "ext.cnf",
            ], in: directory)
        // A second, unrelated CA: trusting it must not make the server's certificate valid.
        try Self.openssl(
            ["req", "-x509"] + ec + [
                "-keyout", "other.key", "-out", "other.pem", "-days", "2", "-subj", "/CN=Other CA",
            ],
            in: directory)
        let script = """
            import http.server, ssl, sys
            class Handler(http.server.BaseHTTPRequestHandler):
                protocol_version = "HTTP/1.1"
                def do_POST(self):
                    body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                    status = 201 if body == b"ping" else 400
                    self.send_response(status)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                def log_message(self, *args):
                    pass
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(sys.argv[1], sys.argv[2])
            server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
            server.socket = context.wrap_socket(server.socket, server_side=True)
            print(server.server_address[1], flush=True)
            server.serve_forever()
            """
        try script.write(toFile: directory + "/server.py", atomically: true, encoding: .utf8)
        process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", directory + "/server.py", directory + "/server.pem", directory + "/server.key"]
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        var line: [UInt8] = []
        while let byte = try output.fileHandleForReading.read(upToCount: 1)?.first, byte != 0x0A { line.append(byte) }
        guard let port = Int(String(decoding: line, as: UTF8.self)) else {
            kill(process.processIdentifier, SIGKILL)
            throw POSIXError(.EIO)
        }
        self.port = port
    }

    deinit {
        // SIGKILL: a child of Process starts with SIGTERM blocked, so terminate() would not stop it.
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        try? FileManager.default.removeItem(atPath: directory)
    }

    private static func openssl(_ arguments: [String], in directory: String) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["openssl"] + arguments
        process.currentDirectoryURL = URL(fileURLWithPath: directory)
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { throw POSIXError(.EIO) }
    }
}

private func client(trusting trust: TrustRoots) throws -> DeliveryClient {
    var configuration = DeliveryClient.Configuration()
    configuration.trust = trust
    return try DeliveryClient(configuration: configuration)
}

private func failure(_ body: () throws -> Int) -> WebhookClientError? {
    do {
        _ = try body()
        return nil
    } catch {
        return error as? WebhookClientError
    }
}

// Serialized: each test starts its own receiver process; two at once only add load.
@Suite(.serialized) struct DeliveryClientTLSTests {
    @Test func succeedsWhenTheTestCAIsTrusted() throws {
        let receiver = try TLSReceiver()
        let trusted = try client(trusting: .caFile(receiver.directory + "/ca.pem"))
        let url = "https://localhost:\(receiver.port)/hooks"
        #expect(try trusted.post(url: url, headers: [], body: Array("ping".utf8), timeout: .seconds(10)) == 201)
        // The body arrived intact through TLS: the receiver answers 400 to anything else.
        #expect(try trusted.post(url: url, headers: [], body: Array("pong".utf8), timeout: .seconds(10)) == 400)
    }

    @Test func failsForACertificateTheSystemStoreDoesNotTrust() throws {
        let receiver = try TLSReceiver()
        let system = try client(trusting: .system)
        let error = failure {
            try system.post(
                url: "https://localhost:\(receiver.port)/", headers: [], body: Array("ping".utf8), timeout: .seconds(10)
            )
        }
        #expect(error?.kind == .certificateRejected, "\(String(describing: error))")
        #expect(error?.message.contains("local issuer") == true, "\(String(describing: error))")
    }

    @Test func failsWhenAnotherCAIsTrusted() throws {
        let receiver = try TLSReceiver()
        let other = try client(trusting: .caFile(receiver.directory + "/other.pem"))
        let error = failure {
            try other.post(
                url: "https://localhost:\(receiver.port)/", headers: [], body: Array("ping".utf8), timeout: .seconds(10)
            )
        }
        #expect(error?.kind == .certificateRejected, "\(String(describing: error))")
    }

    @Test func failsWhenTheCertificateNamesAnotherHost() throws {
        // Trusted chain, but the certificate is for `localhost` and the URL names 127.0.0.1.
        let receiver = try TLSReceiver()
        let trusted = try client(trusting: .caFile(receiver.directory + "/ca.pem"))
        let error = failure {
            try trusted.post(
                url: "https://127.0.0.1:\(receiver.port)/", headers: [], body: Array("ping".utf8), timeout: .seconds(10)
            )
        }
        #expect(error?.kind == .certificateRejected, "\(String(describing: error))")
        #expect(error?.message.contains("mismatch") == true, "\(String(describing: error))")
    }

    @Test func aMissingCAFileFailsAtConstruction() {
        #expect(throws: WebhookClientError.self) { try client(trusting: .caFile("/nonexistent/ca.pem")) }
    }

    @Test func aTLSPeerThatNeverFinishesTheHandshakeTimesOut() throws {
        // A plain TCP listener that accepts and says nothing: the ClientHello goes unanswered.
        let receiver = try LoopbackReceiver { fd, _ in
            sleep(5)
            close(fd)
        }
        let trusted = try client(trusting: .system)
        let start = monotonicNanoseconds()
        let error = failure {
            try trusted.post(
                url: "https://localhost:\(receiver.port)/", headers: [], body: [], timeout: .milliseconds(400))
        }
        let seconds = Double(monotonicNanoseconds() - start) / 1e9
        #expect(error?.kind == .timedOut, "\(String(describing: error))")
        #expect(seconds < 2, "took \(seconds) s")
    }
}

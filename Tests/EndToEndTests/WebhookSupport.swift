import Foundation
import Glibc
import Synchronization
import TestSupport

/// `scripts/webhooks/receiver.py` on a free loopback port: it logs every POST it gets and answers
/// by path (`/ok`, `/status/NNN`, `/fail/N`, `/slow/MS`), so one receiver serves every test.
final class WebhookReceiver: @unchecked Sendable {
    let process: Process
    let port: Int
    let logPath: String
    /// Its standard input: closed when this process ends, however it ends, so the receiver exits too.
    private let input = Pipe()

    static let scriptPath = repositoryRoot.appendingPathComponent("scripts/webhooks/receiver.py").path

    /// Started once per test process; each test tags its URLs so it reads only its own requests.
    static let shared: WebhookReceiver = {
        do { return try WebhookReceiver() } catch { fatalError("could not start the webhook receiver: \(error)") }
    }()

    init() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "buzzkit-receiver-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        logPath = directory.appendingPathComponent("requests.jsonl").path
        try Data().write(to: URL(fileURLWithPath: logPath))
        process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", Self.scriptPath, "serve", "--log", logPath, "--exit-with-stdin"]
        let output = Pipe()
        process.standardOutput = output
        process.standardInput = input
        // Not our stderr: a child holding it open would keep `swift test` waiting after we exit.
        process.standardError = FileHandle.nullDevice
        try process.run()
        let pid = process.processIdentifier
        atexit_pids.withLock { $0.append(pid) }
        var line = ""
        let deadline = Date().addingTimeInterval(10)
        while !line.contains("\n") && Date() < deadline {
            let data = output.fileHandleForReading.availableData
            if data.isEmpty { break }
            line += String(decoding: data, as: UTF8.self)
        }
        let words = line.trimmingCharacters(in: .whitespacesAndNewlines).split(separator: " ")
        guard words.count == 2, words[0] == "listening", let port = Int(words[1]) else {
            throw TestFailure("receiver said: \(line)")
        }
        self.port = port
    }

    /// A URL on this receiver with a fresh tag: `/ok/<tag>` and the like.
    func url(_ behaviour: String, tag: String) -> String { "http://127.0.0.1:\(port)/\(behaviour)/\(tag)" }

    /// The requests whose path contains `tag`, in arrival order.
    func requests(tag: String) -> [JSONDict] {
        let text = (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? ""
        return text.split(separator: "\n").compactMap { line in
            (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? JSONDict
        }.filter { ($0["path"] as? String)?.contains("/\(tag)") ?? false }
    }

    /// The events (decoded bodies) received for `tag`.
    func events(tag: String) -> [JSONDict] {
        requests(tag: tag).compactMap { request in
            (request["body"] as? String).flatMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) } as? JSONDict
        }
    }

    /// Waits until `condition` holds on the events of `tag` (10 s at most).
    @discardableResult
    func waitFor(tag: String, seconds: Double = 10, _ condition: ([JSONDict]) -> Bool) -> [JSONDict] {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            let events = events(tag: tag)
            if condition(events) { return events }
            usleep(50_000)
        }
        return events(tag: tag)
    }

    /// Python's `hmac` checks every signature received for `tag` (independently of our code).
    /// - Returns: (valid, invalid) counts.
    func verifySignatures(secret: String, tag: String) throws -> (valid: Int, invalid: Int) {
        let result = try runProcess(
            "/usr/bin/env", ["python3", Self.scriptPath, "verify", "--secret", secret, "--log", logPath, "--tag", tag])
        guard let object = try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? JSONDict else {
            throw TestFailure("verify said: \(result.stdout) \(result.stderr)")
        }
        return (object["valid"] as? Int ?? -1, object["invalid"] as? Int ?? -1)
    }
}

private let atexit_pids: Mutex<[Int32]> = {
    atexit { atexit_pids.withLock { for pid in $0 { kill(pid, SIGTERM) } } }
    return Mutex([])
}()

enum WebhookServers {
    /// A server that may send to the loopback receiver, retrying after 1 s, twice.
    static let shared: TestServer = start(.sqlite)
    /// The same on PostgreSQL, started on first use (only when a test server is configured).
    static let sharedPostgres: TestServer = start(.postgres)

    /// The shared webhook server on `kind`.
    static func shared(_ kind: StoreKind) -> TestServer { kind == .postgres ? sharedPostgres : shared }

    /// The settings of a server that sends to the loopback receiver (and retries after 1 s, twice).
    static let environment = ["BUZZKIT_WEBHOOK_ALLOW_PRIVATE_NETWORKS": "true"]
    static var config: [String: Any] { ["webhookRetryScheduleSeconds": [1, 1]] }

    private static func start(_ kind: StoreKind) -> TestServer {
        do {
            let server = try TestServer.start(environment: environment, config: config, store: kind)
            let pid = server.process.processIdentifier
            atexit_pids.withLock { $0.append(pid) }
            return server
        } catch {
            fatalError("could not start buzzkit: \(error)")
        }
    }
}

extension IdentitySession {
    /// Registers a webhook and returns (id, secret).
    func createWebhook(url: String, events: [String]? = nil) throws -> (id: String, secret: String) {
        var body: JSONDict = ["url": url]
        if let events { body["events"] = events }
        let response = try backend("POST", "/v1/webhooks", body)
        guard response.status == 201, let id = response.data?.object("webhook")?.string("id"),
            let secret = response.data?.string("secret")
        else { throw TestFailure("webhook creation: \(response.status) \(response.text)") }
        return (id, secret)
    }
}

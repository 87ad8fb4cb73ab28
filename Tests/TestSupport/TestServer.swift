import Foundation

/// The real `buzzkit` binary, started on a free port with a fresh database, for end-to-end tests.
///
/// ```swift
/// let server = try TestServer.start()
/// defer { server.stop() }
/// let client = try HTTPClient(port: server.port)
/// ```
package final class TestServer: @unchecked Sendable {
    package let process: Process
    package let port: Int
    package let directory: URL
    package let databasePath: String
    /// The PostgreSQL database a `.postgres` server runs on, dropped once it stopped.
    private let postgres: PostgresTestDatabase?
    /// The workspace key the server was bootstrapped with.
    package let workspaceKey: String
    package let stderrPath: String

    /// Path of the built executable, next to the test bundle.
    package static var binaryPath: String {
        if let override = ProcessInfo.processInfo.environment["BUZZKIT_BINARY"] { return override }
        var url = URL(fileURLWithPath: CommandLine.arguments.first ?? ".").deletingLastPathComponent()
        // `swift test` runs `<build>/debug/<Package>PackageTests.xctest`; the binary sits beside it.
        for _ in 0..<4 {
            let candidate = url.appendingPathComponent("buzzkit").path
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
            url = url.deletingLastPathComponent()
        }
        return FileManager.default.currentDirectoryPath + "/.build/debug/buzzkit"
    }

    /// Starts `buzzkit serve --port 0` and waits for its `listening on` line.
    /// - Parameters:
    ///   - environment: extra environment (`BUZZKIT_LOG_LEVEL`, …).
    ///   - config: settings written to a config file for this server (limits, timeouts).
    ///   - databasePath: reuse a database (restart tests): a path or a PostgreSQL URL; a fresh one by default.
    ///   - store: the engine of the fresh database; SQLite by default.
    package static func start(
        environment: [String: String] = [:], config: [String: Any] = [:], databasePath: String? = nil,
        workspaceKey: String? = nil, store: StoreKind = .sqlite
    ) throws -> TestServer {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "buzzkit-test-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        var postgres: PostgresTestDatabase?
        if databasePath == nil, store == .postgres {
            postgres = try PostgresTestDatabase.make()
            guard postgres != nil else { throw TestFailure("BUZZKIT_TEST_POSTGRES_URL is not set") }
        }
        let database = databasePath ?? postgres?.url ?? directory.appendingPathComponent("data/buzzkit.sqlite").path
        let key = workspaceKey ?? "bk_ws_" + randomAlphanumerics(32)
        var settings = config
        if settings["logLevel"] == nil { settings["logLevel"] = "info" }
        let configPath = directory.appendingPathComponent("buzzkit.json").path
        try JSONSerialization.data(withJSONObject: settings).write(to: URL(fileURLWithPath: configPath))

        let process = Process()
        process.executableURL = URL(fileURLWithPath: binaryPath)
        process.arguments = ["serve", "--port", "0", "--database", database, "--config", configPath]
        var env = ProcessInfo.processInfo.environment
        env["BUZZKIT_BOOTSTRAP_WORKSPACE_KEY"] = key
        for (name, value) in environment { env[name] = value }
        process.environment = env
        let stdout = Pipe()
        process.standardOutput = stdout
        let stderrPath = directory.appendingPathComponent("stderr.log").path
        try Data().write(to: URL(fileURLWithPath: stderrPath))
        process.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: stderrPath))
        try process.run()

        let port = try readPort(from: stdout.fileHandleForReading, process: process, stderrPath: stderrPath)
        return TestServer(
            process: process, port: port, directory: directory, databasePath: database, workspaceKey: key,
            stderrPath: stderrPath, postgres: postgres)
    }

    private init(
        process: Process, port: Int, directory: URL, databasePath: String, workspaceKey: String, stderrPath: String,
        postgres: PostgresTestDatabase?
    ) {
        self.postgres = postgres
        self.process = process
        self.port = port
        self.directory = directory
        self.databasePath = databasePath
        self.workspaceKey = workspaceKey
        self.stderrPath = stderrPath
    }

    private static func readPort(from handle: FileHandle, process: Process, stderrPath: String) throws -> Int {
        var text = ""
        let deadline = Date().addingTimeInterval(30)
        while Date() < deadline {
            let data = handle.availableData
            if data.isEmpty {
                if !process.isRunning {
                    let log = (try? String(contentsOfFile: stderrPath, encoding: .utf8)) ?? ""
                    throw TestFailure("buzzkit exited before listening: \(log)")
                }
                continue
            }
            text += String(decoding: data, as: UTF8.self)
            if let line = text.split(separator: "\n").first(where: { $0.hasPrefix("listening on http://") }),
                let port = line.split(separator: ":").last.flatMap({ Int($0) })
            {
                return port
            }
        }
        throw TestFailure("buzzkit did not print its listening line: \(text)")
    }

    /// Sends SIGTERM and waits for the exit status.
    @discardableResult
    package func stop() -> Int32 {
        if process.isRunning {
            process.terminate()
            process.waitUntilExit()
        }
        return process.terminationStatus
    }

    /// SIGKILL, as a crash would.
    package func kill() {
        if process.isRunning {
            Foundation.kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
    }

    /// Everything the server logged so far.
    package var logs: String { (try? String(contentsOfFile: stderrPath, encoding: .utf8)) ?? "" }

    /// Creates a tenant through `POST /v1/tenants` and returns its keys.
    package func createTenant(name: String = "acme") throws -> TestTenant {
        let client = try HTTPClient(port: port)
        let response = try client.send(
            "POST", "/v1/tenants", json: ["name": name], headers: ["Authorization": "Bearer \(workspaceKey)"])
        guard response.status == 201, let data = response.json?["data"] as? [String: Any],
            let tenant = data["tenant"] as? [String: Any], let id = tenant["id"] as? String,
            let secretKey = data["secretKey"] as? String, let clientKey = data["clientKey"] as? String,
            let identitySecret = data["identitySecret"] as? String
        else { throw TestFailure("tenant creation failed: \(response.status) \(response.text)") }
        return TestTenant(id: id, secretKey: secretKey, clientKey: clientKey, identitySecret: identitySecret)
    }
}

/// A tenant's keys, as `POST /v1/tenants` showed them.
package struct TestTenant: Sendable {
    package var id: String
    package var secretKey: String
    package var clientKey: String
    package var identitySecret: String

    package var backend: [String: String] { ["Authorization": "Bearer \(secretKey)"] }
    package var app: [String: String] { ["Authorization": "Bearer \(clientKey)"] }
}

/// A failure of the test machinery itself.
package struct TestFailure: Error, CustomStringConvertible {
    package var description: String
    package init(_ description: String) { self.description = description }
}

/// Random `[A-Za-z0-9]` characters, for ids and keys in tests.
package func randomAlphanumerics(_ count: Int) -> String {
    let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789")
    return String((0..<count).map { _ in alphabet.randomElement()! })
}

/// A fresh, well-formed anonymous id.
package func newAnonymousID() -> String { "anon_" + randomAlphanumerics(21) }

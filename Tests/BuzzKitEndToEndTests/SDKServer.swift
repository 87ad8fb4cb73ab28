import BuzzKit
import Foundation
import Glibc
import Identity
import TestSupport
import XCTest

/// The real `buzzkit serve` on a port chosen before it starts, so an SDK client can be configured
/// while the server is down and find it once it comes up (and again after a SIGKILL).
final class SDKServer: @unchecked Sendable {
    let port: Int
    let directory: URL
    let workspaceKey = "bk_ws_" + randomAlphanumerics(32)
    private var process: Process?
    var tenant: SDKTenant!

    var baseURL: URL { URL(string: "http://127.0.0.1:\(port)")! }
    var database: String { directory.appendingPathComponent("buzzkit.sqlite").path }

    init() throws {
        port = try freePort()
        directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "buzzkit-sdk-e2e-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        // A fleet of test devices shares one client key: lift the per-key rate limit.
        let config: [String: Any] = ["logLevel": "warn", "clientKeyRatePerSecond": 100_000]
        try JSONSerialization.data(withJSONObject: config).write(to: directory.appendingPathComponent("config.json"))
    }

    /// A server with a tenant, left running.
    static func withTenant() throws -> SDKServer {
        let server = try SDKServer()
        try server.start()
        server.tenant = try server.createTenant()
        return server
    }

    func start() throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: TestServer.binaryPath)
        process.arguments = [
            "serve", "--port", String(port), "--database", database, "--config",
            directory.appendingPathComponent("config.json").path,
        ]
        var environment = ProcessInfo.processInfo.environment
        environment["BUZZKIT_BOOTSTRAP_WORKSPACE_KEY"] = workspaceKey
        process.environment = environment
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        self.process = process
        var text = ""
        let deadline = Date().addingTimeInterval(30)
        while Date() < deadline, !text.contains("listening on") {
            let data = output.fileHandleForReading.availableData
            if data.isEmpty && !process.isRunning { throw TestFailure("buzzkit serve exited: \(text)") }
            text += String(decoding: data, as: UTF8.self)
        }
        guard text.contains("listening on") else { throw TestFailure("buzzkit serve did not listen: \(text)") }
    }

    /// SIGTERM, waiting for the exit.
    func stop() {
        guard let process, process.isRunning else { return }
        process.terminate()
        process.waitUntilExit()
    }

    /// SIGKILL, as a crash would.
    func kill() {
        guard let process, process.isRunning else { return }
        Glibc.kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }

    private func createTenant() throws -> SDKTenant {
        let client = try HTTPClient(port: port)
        let response = try client.send(
            "POST", "/v1/tenants", json: ["name": "sdk"], headers: ["Authorization": "Bearer \(workspaceKey)"])
        guard response.status == 201, let data = response.data, let tenant = data["tenant"] as? [String: Any],
            let id = tenant["id"] as? String, let secretKey = data["secretKey"] as? String,
            let clientKey = data["clientKey"] as? String, let identitySecret = data["identitySecret"] as? String
        else { throw TestFailure("tenant: \(response.status) \(response.text)") }
        return SDKTenant(id: id, secretKey: secretKey, clientKey: clientKey, identitySecret: identitySecret)
    }

    /// The hash a backend would hand the app for `externalId`.
    func identityHash(_ externalId: String) -> String {
        IdentityVerifier.identityHash(
            externalId: externalId, secret: IdentityVerifier.key(fromSecret: tenant.identitySecret))
    }

    /// A device: an SDK client on its own storage, retrying fast, talking to this server (or to
    /// `baseURL`, a proxy in front of it).
    func device(
        storage: URL? = nil, durability: Durability = .synchronous, baseURL: URL? = nil,
        configure: (inout Configuration) -> Void = { _ in }
    ) -> BuzzKitClient {
        var configuration = Configuration()
        configuration.platform = .ios
        configuration.retry.baseDelay = 0.05
        configuration.retry.maxDelay = 0.5
        configuration.requestTimeout = 5
        configuration.durability = durability
        configuration.log = { _ in }
        configure(&configuration)
        let directory = storage ?? self.directory.appendingPathComponent("device-\(UUID().uuidString)")
        return BuzzKitClient(
            clientKey: tenant.clientKey, baseURL: baseURL ?? self.baseURL, storageDirectory: directory,
            configuration: configuration)
    }

    /// `GET /v1/subscribers/{id}` with the secret key: the subscriber and the metadata.
    func subscriber(_ id: String) throws -> (subscriber: [String: Any], metadata: [String: Any])? {
        let response = try HTTPClient(port: port).send(
            "GET", "/v1/subscribers/\(id.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? id)",
            headers: tenant.backend)
        guard response.status == 200, let data = response.data?["subscriber"] as? [String: Any] else { return nil }
        return (data, response.json?["metadata"] as? [String: Any] ?? [:])
    }

    /// The whole timeline of `id`, every page.
    func timeline(_ id: String) throws -> [[String: Any]] {
        let client = try HTTPClient(port: port)
        var events: [[String: Any]] = []
        var after: Int? = nil
        repeat {
            let query = "limit=1000" + (after.map { "&after=\($0)" } ?? "")
            let response = try client.send("GET", "/v1/subscribers/\(id)/events?\(query)", headers: tenant.backend)
            guard response.status == 200, let data = response.data else {
                throw TestFailure("timeline \(id): \(response.status) \(response.text)")
            }
            events += data["events"] as? [[String: Any]] ?? []
            after = data["nextCursor"] as? Int
        } while after != nil
        return events
    }

    deinit {
        kill()
        try? FileManager.default.removeItem(at: directory)
    }
}

/// A tenant's keys, as `POST /v1/tenants` showed them.
struct SDKTenant {
    var id: String
    var secretKey: String
    var clientKey: String
    var identitySecret: String
    var backend: [String: String] { ["Authorization": "Bearer \(secretKey)"] }
}

/// A port nobody listens on right now (bound to port 0, read back, released).
func freePort() throws -> Int {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    defer { close(fd) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = 0
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let bound = withUnsafeMutablePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
            bind(fd, pointer, length) == 0 && getsockname(fd, pointer, &length) == 0
        }
    }
    guard bound else { throw TestFailure("no free port: errno \(errno)") }
    return Int(UInt16(bigEndian: address.sin_port))
}

extension Array where Element == [String: Any] {
    var names: [String] { compactMap { $0["name"] as? String } }
    var ids: [String] { compactMap { $0["id"] as? String } }
    /// The events the app sent (not the server's `$subscriber.merged` markers).
    var appEvents: [[String: Any]] { filter { ($0["name"] as? String) != "$subscriber.merged" } }
    var merges: [[String: Any]] { filter { ($0["name"] as? String) == "$subscriber.merged" } }
}

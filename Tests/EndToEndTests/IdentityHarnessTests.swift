import Foundation
import Glibc
import Synchronization
import TestSupport
import Testing

// Shared pieces of the identity end-to-end suites (API.md §3-8): the real `buzzkit` binary,
// started once per test process, and a tenant per test so tests never see each other's data.

/// Servers this process started, terminated at exit (a crashed test run must not leave them).
private let startedServerPIDs = Mutex<[Int32]>([])

enum IdentityServers {
    /// Shared by the identity suites; each test makes its own tenant.
    static let shared: TestServer = start(.sqlite)
    /// For the load tests (races, 10,000 events), so their writes do not queue behind the rest.
    static let heavyServer: TestServer = start(.sqlite)
    /// The same two on PostgreSQL, started on first use (only when a test server is configured).
    static let sharedPostgres: TestServer = start(.postgres)
    static let heavyPostgres: TestServer = start(.postgres)

    /// The shared server on `kind`.
    static func shared(_ kind: StoreKind) -> TestServer { kind == .postgres ? sharedPostgres : shared }
    /// The load-test server on `kind`.
    static func heavy(_ kind: StoreKind) -> TestServer { kind == .postgres ? heavyPostgres : heavyServer }

    private static func start(_ kind: StoreKind) -> TestServer {
        do {
            let server = try TestServer.start(store: kind)
            startedServerPIDs.withLock { pids in
                if pids.isEmpty {
                    atexit {
                        startedServerPIDs.withLock { for pid in $0 { kill(pid, SIGTERM) } }
                    }
                }
                pids.append(server.process.processIdentifier)
            }
            return server
        } catch {
            fatalError("could not start buzzkit: \(error)")
        }
    }
}

typealias JSONDict = [String: Any]

/// A fresh tenant of a running server and one keep-alive connection to it, or of an in-process
/// app with a manual clock (for tests that order writes in time).
final class IdentitySession {
    private let running: (server: TestServer, client: HTTPClient)?
    /// Set for a session made with `init(inProcess:)`.
    let inProcess: InProcessApp?
    let tenant: TestTenant

    var server: TestServer { running!.server }
    var client: HTTPClient { running!.client }

    /// A session on the shared server of `kind`.
    convenience init(_ kind: StoreKind) throws { try self.init(IdentityServers.shared(kind)) }

    init(_ server: TestServer = IdentityServers.shared) throws {
        tenant = try server.createTenant(name: "identity-" + randomAlphanumerics(8))
        running = (server, try HTTPClient(port: server.port))
        inProcess = nil
    }

    /// A session on its own in-process app: its `tick()` moves the manual clock, no sleeping.
    init(inProcess app: InProcessApp) throws {
        tenant = try app.createTenant(name: "identity-" + randomAlphanumerics(8))
        running = nil
        inProcess = app
    }

    deinit { inProcess?.close() }

    /// Moves the server's clock on so "newer" is well defined: 3 ms of the manual clock in
    /// process; against a real server, 3 ms of waiting.
    func tick() {
        if let inProcess { inProcess.clock.advance(byMillis: 3) } else { usleep(3_000) }
    }

    private func send(_ method: String, _ path: String, json: Any?, headers: [String: String]) throws
        -> HTTPClient.Response
    {
        if let inProcess { return try inProcess.send(method, path, json: json, headers: headers) }
        return try client.send(method, path, json: json, headers: headers)
    }

    /// With the secret key.
    @discardableResult
    func backend(_ method: String, _ path: String, _ json: Any? = nil) throws -> HTTPClient.Response {
        try send(method, path, json: json, headers: tenant.backend)
    }

    /// With the client key (and any identity headers).
    @discardableResult
    func app(_ method: String, _ path: String, _ json: Any? = nil, headers: [String: String] = [:]) throws
        -> HTTPClient.Response
    {
        try send(method, path, json: json, headers: tenant.app.merging(headers) { _, new in new })
    }

    @discardableResult
    func identify(_ body: JSONDict) throws -> HTTPClient.Response { try app("POST", "/v1/identify", body) }

    /// The subscriber `id` reaches, as the backend sees it; nil on 404.
    func subscriber(_ id: String) throws -> JSONDict? {
        let response = try backend("GET", "/v1/subscribers/\(pathID(id))")
        if response.status == 404 { return nil }
        guard response.status == 200, let subscriber = response.data?["subscriber"] as? JSONDict else {
            throw TestFailure("GET \(id): \(response.status) \(response.text)")
        }
        return subscriber
    }

    /// The whole timeline, paged with `limit`.
    func timeline(_ id: String, limit: Int = 1000) throws -> [JSONDict] {
        var all: [JSONDict] = []
        var after = 0
        while true {
            let response = try backend("GET", "/v1/subscribers/\(pathID(id))/events?after=\(after)&limit=\(limit)")
            guard response.status == 200, let data = response.data, let events = data["events"] as? [JSONDict] else {
                throw TestFailure("timeline of \(id): \(response.status) \(response.text)")
            }
            all += events
            guard let next = data["nextCursor"] as? Int else { return all }
            after = next
        }
    }

    /// Sends events as the app; the answer must be 200.
    @discardableResult
    func sendEvents(_ subscriberID: String, _ events: [JSONDict]) throws -> (accepted: Int, duplicates: Int) {
        let response = try app("POST", "/v1/events", ["subscriberId": subscriberID, "events": events])
        guard response.status == 200, let data = response.data else {
            throw TestFailure("events for \(subscriberID): \(response.status) \(response.text)")
        }
        return (data["accepted"] as? Int ?? -1, data["duplicates"] as? Int ?? -1)
    }

    /// `PATCH /v1/tenant`; the answer must be 200.
    func settings(_ patch: JSONDict) throws {
        let response = try backend("PATCH", "/v1/tenant", patch)
        guard response.status == 200 else { throw TestFailure("PATCH /v1/tenant: \(response.status) \(response.text)") }
    }

    /// Every subscriber of the tenant (paged), optionally filtered by a query such as `anonymous=true`.
    func listAll(_ filter: String = "", limit: Int = 1000) throws -> [JSONDict] {
        var all: [JSONDict] = []
        var cursor: String?
        repeat {
            var query = "limit=\(limit)"
            if !filter.isEmpty { query += "&" + filter }
            if let cursor { query += "&cursor=\(cursor)" }
            let response = try backend("GET", "/v1/subscribers?\(query)")
            guard response.status == 200, let data = response.data, let page = data["subscribers"] as? [JSONDict] else {
                throw TestFailure("list: \(response.status) \(response.text)")
            }
            all += page
            cursor = data["nextCursor"] as? String
        } while cursor != nil
        return all
    }

    /// `hex(HMAC-SHA256(identitySecret, externalId))`, from the binary's own CLI.
    func identityHash(_ externalID: String) throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: TestServer.binaryPath)
        process.arguments = ["identity-hash", "--secret", tenant.identitySecret, externalID]
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    }
}

/// An id as a path segment: everything but unreserved characters percent-encoded.
func pathID(_ id: String) -> String {
    var allowed = CharacterSet.alphanumerics.intersection(
        CharacterSet(charactersIn: Unicode.Scalar(0)..<Unicode.Scalar(128)))
    allowed.insert(charactersIn: "-_.~")
    return id.addingPercentEncoding(withAllowedCharacters: allowed) ?? id
}

/// An event as the SDK sends it.
func makeEvent(_ id: String, _ name: String = "screen.viewed", timestamp: String? = nil, properties: JSONDict? = nil)
    -> JSONDict
{
    var event: JSONDict = ["id": id, "name": name]
    if let timestamp { event["timestamp"] = timestamp }
    if let properties { event["properties"] = properties }
    return event
}

/// `2020-01-01T00:00:00.000Z` plus `millis`, as the server renders times (RFC 3339, UTC, ms).
func isoStamp(_ millis: Int, base: String = "2020-01-01") -> String {
    let s = millis / 1000
    let pad2 = { (v: Int) in v < 10 ? "0\(v)" : "\(v)" }
    let ms = millis % 1000
    let msText = ms < 10 ? "00\(ms)" : ms < 100 ? "0\(ms)" : "\(ms)"
    precondition(s < 86_400)
    return "\(base)T\(pad2(s / 3600)):\(pad2((s / 60) % 60)):\(pad2(s % 60)).\(msText)Z"
}

extension HTTPClient.Response {
    var subscriber: JSONDict? { data?["subscriber"] as? JSONDict }
    var mergeShape: String? { (data?["merge"] as? JSONDict)?["shape"] as? String }
    var errorDetails: JSONDict? { (json?["error"] as? JSONDict)?["details"] as? JSONDict }
    var metadata: JSONDict? { json?["metadata"] as? JSONDict }
}

extension Dictionary where Key == String, Value == Any {
    func string(_ key: String) -> String? { self[key] as? String }
    func int(_ key: String) -> Int? { self[key] as? Int }
    func bool(_ key: String) -> Bool? { self[key] as? Bool }
    func object(_ key: String) -> JSONDict? { self[key] as? JSONDict }
    func strings(_ key: String) -> [String] { self[key] as? [String] ?? [] }
    func objects(_ key: String) -> [JSONDict] { self[key] as? [JSONDict] ?? [] }
}

/// Runs `body` on `count` threads that start together; returns each thread's error, if any.
func runConcurrently(_ count: Int, _ body: @escaping @Sendable (Int) throws -> Void) -> [String] {
    let errors = Mutex<[String]>([])
    let group = DispatchGroup()
    let start = DispatchSemaphore(value: 0)
    for i in 0..<count {
        group.enter()
        let thread = Thread {
            start.wait()
            do { try body(i) } catch { errors.withLock { $0.append("thread \(i): \(error)") } }
            group.leave()
        }
        thread.stackSize = 1 << 20
        thread.start()
    }
    for _ in 0..<count { start.signal() }
    group.wait()
    return errors.withLock { $0 }
}

/// Access: the client key is public, so it may not reach backend routes (API.md §1).
@Suite struct IdentityAccessTests {
    @Test func clientKeyCannotCallBackendRoutes() throws {
        let s = try IdentitySession()
        let anon = newAnonymousID()
        try s.sendEvents(anon, [makeEvent("e1")])
        let calls: [(String, String, Any?)] = [
            ("GET", "/v1/subscribers", nil),
            ("GET", "/v1/subscribers/\(anon)", nil),
            ("PUT", "/v1/subscribers/someone", ["attributes": ["plan": "pro"]]),
            ("DELETE", "/v1/subscribers/\(anon)", nil),
            ("GET", "/v1/subscribers/\(anon)/events", nil),
            ("POST", "/v1/subscribers/someone/merge", ["anonymousId": anon]),
            ("GET", "/v1/tenant", nil),
            ("PATCH", "/v1/tenant", ["requireVerification": true]),
            ("GET", "/v1/tenant/identity-secret", nil),
            ("POST", "/v1/tenant/identity-secret/rotate", nil),
            ("POST", "/v1/tenants", ["name": "evil"]),
        ]
        for (method, path, body) in calls {
            let response = try s.app(method, path, body)
            #expect(response.status == 403, "\(method) \(path)")
            #expect(response.errorCode == "forbidden", "\(method) \(path)")
        }
        // Nothing happened: no subscriber created, the anonymous one and its event are still there,
        // the settings are unchanged.
        #expect(try s.subscriber("someone") == nil)
        #expect(try s.subscriber(anon)?.int("eventCount") == 1)
        let tenant = try s.backend("GET", "/v1/tenant").data?.object("tenant")
        #expect(tenant?.bool("requireVerification") == false)
    }

    @Test func missingOrForeignKeysSeeNothing() throws {
        let a = try IdentitySession()
        let b = try IdentitySession()
        try a.backend("PUT", "/v1/subscribers/shared_name", ["attributes": ["owner": "a"]])
        let noKey = try a.client.send("GET", "/v1/subscribers/shared_name")
        #expect(noKey.status == 401)
        #expect(noKey.errorCode == "unauthorized")
        // Tenant B cannot tell that the id exists in tenant A.
        let foreign = try b.backend("GET", "/v1/subscribers/shared_name")
        #expect(foreign.status == 404)
        #expect(foreign.errorCode == "subscriber_not_found")
        #expect(try b.backend("DELETE", "/v1/subscribers/shared_name").status == 404)
        #expect(try a.subscriber("shared_name")?.object("attributes")?.string("owner") == "a")
    }
}

import Foundation
import Identity
import JSON
import TestSupport
import Testing

/// Operations and abuse checks against the real binary (the slower load scripts are in
/// scripts/reliability/): metrics, the access log, secrets never logged, hostile JSON and
/// gzip bodies, backup under writes.
@Suite(.serialized) struct ReliabilityTests {
    // MARK: - Secrets never leak

    /// A full scenario that handles every kind of secret (workspace, secret and client keys,
    /// identity secrets before and after rotation, identity hashes, JWTs, wrong ones of each),
    /// at log level debug: none of them, nor any request body, may appear in the logs.
    @Test func logsNeverContainKeysSecretsHashesOrTokens() throws {
        let server = try TestServer.start(config: ["logLevel": "debug"])
        let tenant = try server.createTenant(name: "leak-check")
        let client = try HTTPClient(port: server.port)
        var secrets = [server.workspaceKey, tenant.secretKey, tenant.clientKey, tenant.identitySecret]

        let anon = newAnonymousID()
        let user = "leak_user_1"
        let hash = IdentityVerifier.identityHash(
            externalId: user, secret: IdentityVerifier.key(fromSecret: tenant.identitySecret))
        secrets.append(hash)
        var r = try client.send(
            "POST", "/v1/identify",
            json: ["externalId": user, "anonymousId": anon, "identityHash": hash, "email": "leak@example.com"],
            headers: tenant.app)
        #expect(r.status == 200)

        let exp = Int(Date().timeIntervalSince1970) + 3600
        let token = IdentityVerifier.makeToken(
            claims: ["sub": "leak_user_2", "exp": JSONValue(Int64(exp))],
            secret: IdentityVerifier.key(fromSecret: tenant.identitySecret))
        secrets.append(token)
        secrets.append(String(token.split(separator: ".")[2]))  // the signature alone
        r = try client.send(
            "POST", "/v1/identify", json: ["externalId": "leak_user_2", "identityToken": token], headers: tenant.app)
        #expect(r.status == 200)
        // Later app calls carry the proof in a header.
        r = try client.send(
            "PATCH", "/v1/subscribers/\(user)/attributes", json: ["attributes": ["theme": "dark"]],
            headers: tenant.app.merging(["BuzzKit-Identity-Hash": hash]) { $1 })
        #expect(r.status == 200)
        r = try client.send(
            "POST", "/v1/events", json: ["subscriberId": "leak_user_2", "events": [["id": "e1", "name": "open"]]],
            headers: tenant.app.merging(["BuzzKit-Identity-Token": token]) { $1 })
        #expect(r.status == 200)

        // Wrong proofs and keys, refused: still never echoed into the logs.
        let wrongHash = String(repeating: "ab", count: 32)
        let wrongToken = IdentityVerifier.makeToken(
            claims: ["sub": .string(user), "exp": JSONValue(Int64(exp))], secret: Array("not-the-secret-\(UUID())".utf8)
        )
        let wrongKey = "bk_sk_" + randomAlphanumerics(32)
        secrets += [wrongHash, wrongToken, wrongKey]
        r = try client.send(
            "POST", "/v1/identify", json: ["externalId": user, "identityHash": wrongHash], headers: tenant.app)
        #expect(r.status == 401)
        r = try client.send(
            "POST", "/v1/identify", json: ["externalId": user, "identityToken": wrongToken], headers: tenant.app)
        #expect(r.status == 401)
        r = try client.send("GET", "/v1/subscribers/\(user)", headers: ["Authorization": "Bearer \(wrongKey)"])
        #expect(r.status == 401)
        // A malformed body that carries a secret: the 400 must not quote the body into the log.
        r = try client.send(
            "POST", "/v1/identify", body: Array("{\"externalId\": \"x\", \"identityHash\": \"\(hash)\", ".utf8),
            headers: tenant.app.merging(["Content-Type": "application/json"]) { $1 })
        #expect(r.status == 400)

        // The identity secret through the settings view and a rotation.
        r = try client.send("GET", "/v1/tenant/identity-secret", headers: tenant.backend)
        #expect(r.status == 200)
        r = try client.send("POST", "/v1/tenant/identity-secret/rotate", headers: tenant.backend)
        #expect(r.status == 200)
        let rotated = try #require(r.data?["identitySecret"] as? String)
        secrets.append(rotated)
        r = try client.send(
            "PUT", "/v1/subscribers/leak_user_3", json: ["email": "three@example.com"], headers: tenant.backend)
        #expect(r.status == 201)
        _ = try client.send("GET", "/metrics")
        client.close()
        #expect(server.stop() == 0)

        let logs = server.logs
        #expect(logs.contains("\"msg\":\"request\""), "the access log ran")
        for secret in secrets {
            #expect(!logs.contains(secret), "a secret of \(secret.count) characters appears in the logs")
        }
        #expect(!logs.contains("Bearer"))
        #expect(!logs.contains("leak@example.com"), "request bodies are not logged")
    }

    // MARK: - Access log and log level

    @Test func accessLogHasOneJSONLinePerRequestWithIdRouteStatusDurationTenant() throws {
        let server = try TestServer.start()
        defer { server.stop() }
        let tenant = try server.createTenant()
        let client = try HTTPClient(port: server.port)
        let put = try client.send(
            "PUT", "/v1/subscribers/log_1", json: ["attributes": ["a": 1]], headers: tenant.backend)
        #expect(put.status == 201)
        _ = try client.send(
            "GET", "/v1/subscribers/nobody",
            headers: ["X-Request-Id": "req_fromTheClient1"].merging(tenant.backend) { $1 })
        _ = try client.send("GET", "/no/such/route")
        client.close()
        server.stop()

        let lines = server.logs.split(separator: "\n").compactMap {
            try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        }
        #expect(lines.count == server.logs.split(separator: "\n").count, "every line is one JSON object")
        let requests = lines.filter { $0["msg"] as? String == "request" }
        #expect(requests.count == 4)  // tenant creation, PUT, GET, unmatched
        for line in requests {
            for key in ["time", "level", "requestId", "method", "route", "status", "durationMs"] {
                #expect(line[key] != nil, "\(key) missing in \(line)")
            }
            #expect(line["body"] == nil && line["authorization"] == nil)
        }
        let putLine = try #require(requests.first { $0["route"] as? String == "PUT /v1/subscribers/:id" })
        #expect(putLine["status"] as? Int == 201)
        #expect(putLine["tenant"] as? String == tenant.id)
        #expect(
            put.json.flatMap { ($0["metadata"] as? [String: Any])?["requestId"] as? String } == putLine["requestId"]
                as? String)
        // A request refused after it was admitted is logged with its tenant too.
        let getLine = try #require(requests.first { $0["route"] as? String == "GET /v1/subscribers/:id" })
        #expect(getLine["status"] as? Int == 404)
        #expect(getLine["tenant"] as? String == tenant.id)
        #expect(requests.contains { $0["route"] as? String == "unmatched" && $0["status"] as? Int == 404 })
    }

    @Test func logLevelComesFromTheConfigFile() throws {
        let server = try TestServer.start(config: ["logLevel": "warn"])
        _ = try server.createTenant()
        let client = try HTTPClient(port: server.port)
        _ = try client.send("GET", "/healthz")
        client.close()
        server.stop()
        #expect(!server.logs.contains("\"level\":\"info\""), "no info lines at warn: \(server.logs.prefix(300))")
    }

    // MARK: - Metrics

    @Test func metricsExposeRequestsLatencyConnectionsMergesBatchesCommitsAndDatabaseSize() throws {
        let server = try TestServer.start()
        defer { server.stop() }
        let tenant = try server.createTenant()
        let client = try HTTPClient(port: server.port)
        let anon = newAnonymousID()
        _ = try client.send(
            "POST", "/v1/events", json: ["subscriberId": anon, "events": [["id": "m1", "name": "open"]]],
            headers: tenant.app)
        let identify = try client.send(
            "POST", "/v1/identify", json: ["externalId": "metrics_1", "anonymousId": anon], headers: tenant.app)
        #expect(identify.status == 200)
        _ = try client.send(
            "POST", "/v1/identify", json: ["externalId": "metrics_2", "anonymousId": newAnonymousID()],
            headers: tenant.app)
        _ = try client.send("GET", "/v1/subscribers/nobody", headers: tenant.backend)

        let response = try client.send("GET", "/metrics")
        #expect(response.status == 200)
        #expect(response.header("Content-Type")?.hasPrefix("text/plain; version=0.0.4") == true)
        let text = response.text
        let expected = [
            #"buzzkit_http_requests_total{route="POST /v1/identify",status="200"} 2"#,
            #"buzzkit_http_requests_total{route="GET /v1/subscribers/:id",status="404"} 1"#,
            #"buzzkit_http_request_duration_seconds_bucket{route="POST /v1/identify",le="+Inf"} 2"#,
            #"buzzkit_http_request_duration_seconds_count{route="POST /v1/identify"} 2"#,
            #"buzzkit_merges_total{shape="rename"} 1"#,
            #"buzzkit_merges_total{shape="link"} 1"#,
            "# TYPE buzzkit_write_batch_size histogram",
            "# TYPE buzzkit_commit_duration_seconds histogram",
            "# TYPE buzzkit_wal_sync_duration_seconds histogram",
            "# TYPE buzzkit_wal_restart_duration_seconds histogram",
            "# TYPE buzzkit_open_connections gauge",
            "buzzkit_open_connections 1",
            "# TYPE buzzkit_database_bytes gauge",
        ]
        for line in expected {
            #expect(text.contains(line), "missing: \(line)")
        }
        let commits = text.split(separator: "\n").first { $0.hasPrefix("buzzkit_commit_duration_seconds_count ") }
        #expect((commits?.split(separator: " ").last).flatMap { Int($0) } ?? 0 >= 4)
        // synchronous=FULL (the default): the completion thread synced the log for those commits.
        let syncs = text.split(separator: "\n").first { $0.hasPrefix("buzzkit_wal_sync_duration_seconds_count ") }
        #expect((syncs?.split(separator: " ").last).flatMap { Int($0) } ?? 0 >= 1)
        let size = text.split(separator: "\n").first { $0.hasPrefix("buzzkit_database_bytes ") }
        #expect((size?.split(separator: " ").last).flatMap { Int($0) } ?? 0 > 0)
        // Every sample line is `name{labels} value` with a number value.
        for line in text.split(separator: "\n") where !line.hasPrefix("#") {
            #expect(Double(line.split(separator: " ").last ?? "") != nil, "bad sample: \(line)")
        }
    }

    // MARK: - Hostile bodies

    @Test func deepHugeAndMalformedJSONIsRefusedWithoutTakingTheServerDown() throws {
        let server = try TestServer.start()
        defer { server.stop() }
        let tenant = try server.createTenant()
        let headers = tenant.backend.merging(["Content-Type": "application/json"]) { $1 }
        let client = try HTTPClient(port: server.port)
        func post(_ body: [UInt8], id: String = "hostile_1") throws -> HTTPClient.Response {
            let r = try client.send("PUT", "/v1/subscribers/\(id)", body: body, headers: headers)
            if r.header("Connection")?.lowercased() == "close" { try client.connect() }
            return r
        }
        // Nesting: 32 levels parse, 33 and a million do not (no stack overflow).
        func nested(_ depth: Int) -> [UInt8] {
            Array(
                ("{\"attributes\":{\"a\":" + String(repeating: "[", count: depth - 2)
                    + String(repeating: "]", count: depth - 2) + "}}").utf8)
        }
        #expect(try post(nested(32), id: "deep_ok").status == 201, "32 levels are allowed")
        for depth in [33, 1000, 500_000] {
            let r = try post(nested(depth))
            #expect(
                r.status == 400 && r.errorCode == "invalid_json", "depth \(depth): \(r.status) \(r.text.prefix(200))")
        }
        // Malformed.
        for body in ["{", "{\"attributes\": }", "[1,2", "{\"a\":\"\u{1}\"}", "nul", "{\"a\":1}garbage", "\u{FEFF}{}"] {
            let r = try post(Array(body.utf8))
            #expect(r.status == 400 && r.errorCode == "invalid_json", "\(body.debugDescription): \(r.status)")
        }
        let invalidUTF8: [UInt8] = Array("{\"attributes\":{\"a\":\"".utf8) + [0xC3, 0x28] + Array("\"}}".utf8)
        #expect(try post(invalidUTF8).status == 400)
        // Huge: past the body limit is 413 before any parsing.
        let huge =
            Array("{\"attributes\":{\"a\":\"".utf8) + [UInt8](repeating: 120, count: 2 << 20) + Array("\"}}".utf8)
        let r = try post(huge)
        #expect(r.status == 413 && r.errorCode == "payload_too_large")
        // A million-element array inside the limit is refused by the rules, not by a crash.
        let wide = Array(
            ("{\"attributes\":{\"a\":[" + Array(repeating: "0", count: 400_000).joined(separator: ",") + "]}}").utf8)
        #expect(try post(wide).status == 400)
        try client.connect()
        #expect(try client.send("GET", "/healthz").status == 200)
        #expect(try client.send("GET", "/v1/subscribers/hostile_1", headers: tenant.backend).status == 404)
    }

    @Test func gzipBombStopsAtTheDecodedLimit() throws {
        let server = try TestServer.start()
        defer { server.stop() }
        let tenant = try server.createTenant()
        // 256 MiB of '0' characters compress to about 250 KB.
        let bomb = try shell("head -c 268435456 /dev/zero | tr '\\0' '0' | gzip -c")
        #expect(bomb.count < 1 << 20)
        let client = try HTTPClient(port: server.port)
        let started = Date()
        let r = try client.send(
            "POST", "/v1/events", body: bomb,
            headers: tenant.app.merging(["Content-Type": "application/json", "Content-Encoding": "gzip"]) { $1 })
        #expect(r.status == 413 && r.errorCode == "payload_too_large", "\(r.status) \(r.text.prefix(200))")
        #expect(Date().timeIntervalSince(started) < 10)
        let fresh = try HTTPClient(port: server.port)
        #expect(try fresh.send("GET", "/healthz").status == 200)
        // The server did not inflate it: its resident size stays far below the decoded size.
        let status = try String(contentsOfFile: "/proc/\(server.process.processIdentifier)/status", encoding: .utf8)
        let rssKB =
            status.split(separator: "\n").first { $0.hasPrefix("VmHWM:") }?.split(separator: " ").dropFirst().first
            .flatMap { Int($0) } ?? 0
        #expect(rssKB < 128 * 1024, "peak RSS \(rssKB) KiB")
    }

    // MARK: - Backup under writes

    @Test func backupDuringWritesHoldsEveryWriteAcknowledgedBeforeItBegan() throws {
        let server = try TestServer.start()
        defer { server.stop() }
        let tenant = try server.createTenant()
        let acknowledged = AckLog()
        let stop = Flag()
        let writers = (0..<3).map { w in
            Thread {
                guard let client = try? HTTPClient(port: server.port) else { return }
                var n = 0
                while !stop.isSet {
                    n += 1
                    let id = "backup_\(w)_\(n)"
                    if let r = try? client.send(
                        "PUT", "/v1/subscribers/\(id)", json: ["attributes": ["n": n]], headers: tenant.backend),
                        r.status == 201
                    {
                        acknowledged.append(id)
                    }
                }
            }
        }
        for thread in writers { thread.start() }
        Thread.sleep(forTimeInterval: 1)
        let before = acknowledged.snapshot()
        let destination = server.directory.appendingPathComponent("backup.sqlite").path
        let backup = Process()
        backup.executableURL = URL(fileURLWithPath: TestServer.binaryPath)
        backup.arguments = ["backup", destination, "--database", server.databasePath]
        backup.standardOutput = Pipe()
        try backup.run()
        backup.waitUntilExit()
        Thread.sleep(forTimeInterval: 0.5)
        stop.set()
        while writers.contains(where: { !$0.isFinished }) { Thread.sleep(forTimeInterval: 0.05) }
        #expect(backup.terminationStatus == 0, "backup exits 0 after its own integrity_check")
        #expect(before.count > 10)

        // Restore drill: a server on the copy answers every write acknowledged before the backup.
        let restored = try TestServer.start(databasePath: destination, workspaceKey: server.workspaceKey)
        defer { restored.stop() }
        let client = try HTTPClient(port: restored.port)
        let missing = try before.filter {
            try client.send("GET", "/v1/subscribers/\($0)", headers: tenant.backend).status != 200
        }
        #expect(missing.isEmpty, "\(missing.count) of \(before.count) acknowledged writes missing from the backup")
    }
}

private final class AckLog: @unchecked Sendable {
    private let lock = NSLock()
    private var ids: [String] = []
    func append(_ id: String) { lock.withLock { ids.append(id) } }
    func snapshot() -> [String] { lock.withLock { ids } }
}

private final class Flag: @unchecked Sendable {
    private let lock = NSLock()
    private var value = false
    var isSet: Bool { lock.withLock { value } }
    func set() { lock.withLock { value = true } }
}

private func shell(_ command: String) throws -> [UInt8] {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/bin/sh")
    process.arguments = ["-c", command]
    let output = Pipe()
    process.standardOutput = output
    try process.run()
    let data = output.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return Array(data)
}

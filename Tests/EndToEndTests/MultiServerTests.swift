import Foundation
import Synchronization
import TestSupport
import Testing

/// API.md §12: several `buzzkit serve` processes on one PostgreSQL database keep every promise
/// one server keeps. Each test makes its own database on the test server
/// (`BUZZKIT_TEST_POSTGRES_URL`, which CI sets) and starts two real servers on it.
@Suite(.enabled(if: PostgresTestDatabase.isAvailable, "needs BUZZKIT_TEST_POSTGRES_URL"))
struct MultiServerTests {
    /// Two servers on one fresh database, one tenant, and a client per server. The two clients
    /// are used by the test thread only; other threads call `client(_:)` for their own.
    final class Pair: @unchecked Sendable {
        let database: PostgresTestDatabase
        let a: TestServer
        let b: TestServer
        let tenant: TestTenant
        let onA: HTTPClient
        let onB: HTTPClient

        /// - Parameters: `environment` and `config` of both servers (see `TestServer.start`).
        init(environment: [String: String] = [:], config: [String: Any] = [:]) throws {
            database = try #require(try PostgresTestDatabase.make())
            let key = "bk_ws_" + randomAlphanumerics(32)
            a = try TestServer.start(
                environment: environment, config: config, databasePath: database.url, workspaceKey: key)
            b = try TestServer.start(
                environment: environment, config: config, databasePath: database.url, workspaceKey: key)
            tenant = try a.createTenant(name: "pair")
            onA = try HTTPClient(port: a.port)
            onB = try HTTPClient(port: b.port)
        }

        deinit {
            a.stop()
            b.stop()
            database.drop()
        }

        /// A client to server `index` (0 is A, 1 is B), for a thread of its own.
        func client(_ index: Int) throws -> HTTPClient { try HTTPClient(port: index % 2 == 0 ? a.port : b.port) }
    }

    @Test func aWriteOnAIsReadAtOnceOnB() throws {
        let pair = try Pair()
        let backend = pair.tenant.backend
        let put = try pair.onA.send("PUT", "/v1/subscribers/reader", json: ["attributes": ["n": 0]], headers: backend)
        #expect(put.status == 201, "\(put.text)")
        // Warm B's snapshot cache for this subscriber, so a stale entry would show.
        #expect(try pair.onB.send("GET", "/v1/subscribers/reader", headers: backend).status == 200)
        var stale: [String] = []
        for n in 1...200 {
            let (writer, reader) = n % 2 == 0 ? (pair.onA, pair.onB) : (pair.onB, pair.onA)
            let patch = try writer.send(
                "PATCH", "/v1/subscribers/reader/attributes", json: ["attributes": ["n": n]], headers: backend)
            #expect(patch.status == 200, "\(patch.text)")
            let read = try reader.send("GET", "/v1/subscribers/reader", headers: backend)
            let seen = (read.subscriber?["attributes"] as? JSONDict)?.int("n")
            if seen != n { stale.append("write \(n), read \(seen.map(String.init) ?? "nothing")") }
            if n % 20 == 0 {
                let events = try writer.send(
                    "POST", "/v1/events", json: ["subscriberId": "reader", "events": [makeEvent("e\(n)")]],
                    headers: backend)
                #expect(events.status == 200, "\(events.text)")
                let timeline = try reader.send("GET", "/v1/subscribers/reader/events?limit=1000", headers: backend)
                let ids = (timeline.data?["events"] as? [JSONDict])?.compactMap { $0.string("id") } ?? []
                if ids.last != "e\(n)" { stale.append("event e\(n) not on the other server's timeline") }
            }
        }
        #expect(stale.isEmpty, "stale reads: \(stale.prefix(5))")
    }

    @Test func identifiesRacingThroughBothServersMergeOnce() throws {
        let pair = try Pair()
        let app = pair.tenant.app
        for round in 0..<10 {
            let anon = newAnonymousID()
            let pre = try pair.onA.send(
                "POST", "/v1/events", json: ["subscriberId": anon, "events": [makeEvent("pre-\(round)")]], headers: app)
            #expect(pre.status == 200, "\(pre.text)")
            // Even rounds: the same person through both servers; odd rounds: two people.
            let people = round % 2 == 0 ? ["same_\(round)", "same_\(round)"] : ["left_\(round)", "right_\(round)"]
            let shapes = Mutex<[String]>([])
            let errors = runConcurrently(2) { i in
                let r = try pair.client(i).send(
                    "POST", "/v1/identify", json: ["externalId": people[i], "anonymousId": anon], headers: app)
                guard r.status == 200 else { throw TestFailure("identify \(people[i]): \(r.status) \(r.text)") }
                shapes.withLock { $0.append(r.mergeShape ?? "?") }
            }
            #expect(errors.isEmpty, "\(errors)")
            let merges = shapes.withLock { $0 }.filter { $0 != "none" }
            #expect(merges.count == 1, "round \(round): exactly one merge, got \(shapes.withLock { $0 })")
            // The anonymous id reaches one person, whose timeline has the pre-login event once
            // and one merge event; the other person (odd rounds) has neither.
            let owner = try pair.onB.send("GET", "/v1/subscribers/\(anon)", headers: pair.tenant.backend)
            let ownerID = try #require(owner.subscriber?.string("id"), "\(owner.text)")
            #expect(Set(people).contains(ownerID))
            let timeline = try pair.onA.send(
                "GET", "/v1/subscribers/\(ownerID)/events?limit=1000", headers: pair.tenant.backend)
            let names = (timeline.data?["events"] as? [JSONDict])?.compactMap { $0.string("name") } ?? []
            #expect(names.filter { $0 == "$subscriber.merged" }.count == 1, "round \(round): \(names)")
            #expect(names.filter { $0 != "$subscriber.merged" }.count == 1, "round \(round): \(names)")
            for other in Set(people) where other != ownerID {
                let loser = try pair.onA.send("GET", "/v1/subscribers/\(other)", headers: pair.tenant.backend)
                #expect(loser.subscriber?.strings("aliases").contains(anon) == false, "\(loser.text)")
            }
        }
    }

    @Test func eventsThroughBothServersGetGaplessUniqueSeq() throws {
        let pair = try Pair()
        let app = pair.tenant.app
        let subject = newAnonymousID()
        let threads = 32
        let batches = 20
        // No 503 and no resend: one SQLite server never answers "busy" here, so neither may two
        // servers on PostgreSQL (API.md §12: every promise a single server keeps).
        let errors = runConcurrently(threads) { i in
            let client = try pair.client(i)
            for batch in 0..<batches {
                let events = (0..<5).map { makeEvent("t\(i)-b\(batch)-\($0)") }
                let r = try client.send(
                    "POST", "/v1/events", json: ["subscriberId": subject, "events": events], headers: app)
                guard r.status == 200, let data = r.data, data.int("accepted") == 5 else {
                    throw TestFailure("thread \(i) batch \(batch): \(r.status) \(r.text)")
                }
            }
        }
        #expect(errors.isEmpty, "\(errors.prefix(3))")
        var timeline: [JSONDict] = []
        var after = 0
        while true {
            let page = try pair.onB.send(
                "GET", "/v1/subscribers/\(subject)/events?after=\(after)&limit=1000", headers: pair.tenant.backend)
            timeline += (page.data?["events"] as? [JSONDict]) ?? []
            guard let next = page.data?["nextCursor"] as? Int else { break }
            after = next
        }
        let total = threads * batches * 5
        #expect(timeline.compactMap { $0.int("seq") } == Array(1...total), "gapless, unique, in order")
        #expect(Set(timeline.compactMap { $0.string("id") }).count == total)
    }

    @Test func aKeyRevokedOnAIsRefusedOnBWithinASecond() throws {
        let pair = try Pair()
        let issued = try pair.onA.send("POST", "/v1/keys", json: ["kind": "secret"], headers: pair.tenant.backend)
        let key = try #require(issued.data?.string("apiKey"), "\(issued.text)")
        let id = try #require((issued.data?["key"] as? JSONDict)?.string("id"))
        let headers = ["Authorization": "Bearer \(key)"]
        // B knows the key (and has cached it) before the revoke.
        #expect(try pair.onB.send("GET", "/v1/tenant", headers: headers).status == 200)
        let revoke = try pair.onA.send("DELETE", "/v1/keys/\(id)", headers: pair.tenant.backend)
        #expect(revoke.status == 200, "\(revoke.text)")
        let revoked = Date()
        var refusedAfter: TimeInterval?
        while Date().timeIntervalSince(revoked) < 3 {
            if try pair.onB.send("GET", "/v1/tenant", headers: headers).status == 401 {
                refusedAfter = Date().timeIntervalSince(revoked)
                break
            }
            usleep(20_000)
        }
        let seconds = try #require(refusedAfter, "B still accepts the revoked key after 3 s")
        #expect(seconds <= 1.0, "refused on B after \(seconds) s")

        // A tenant setting changed on A shows on B within a second too.
        let patch = try pair.onA.send(
            "PATCH", "/v1/tenant", json: ["requireVerification": true], headers: pair.tenant.backend)
        #expect(patch.status == 200, "\(patch.text)")
        let changed = Date()
        var seenAfter: TimeInterval?
        while Date().timeIntervalSince(changed) < 3 {
            let view = try pair.onB.send("GET", "/v1/tenant", headers: pair.tenant.backend)
            if (view.data?["tenant"] as? JSONDict)?.bool("requireVerification") == true {
                seenAfter = Date().timeIntervalSince(changed)
                break
            }
            usleep(20_000)
        }
        #expect(try #require(seenAfter, "B never showed the setting") <= 1.0)
    }

    /// API.md §14 on several servers: both delivery workers read the one outbox, and the claim
    /// (`FOR UPDATE SKIP LOCKED`, then a lease) keeps them from sending an event twice.
    @Test func webhookEventsMadeOnBothServersAreDeliveredOnceInTotal() throws {
        let pair = try Pair(environment: WebhookServers.environment, config: WebhookServers.config)
        let receiver = WebhookReceiver.shared
        let tag = randomAlphanumerics(12)
        let backend = pair.tenant.backend
        // A slow receiver (30 ms a request) keeps a worker busy with its batch (32 at most) for
        // about a second, while the other polls every 200 ms: both servers take a share.
        let created = try pair.onA.send(
            "POST", "/v1/webhooks", json: ["url": receiver.url("slow/30", tag: tag), "events": ["subscriber.created"]],
            headers: backend)
        let secret = try #require(created.data?.string("secret"), "\(created.text)")
        let (threads, perThread) = (4, 12)
        let total = threads * perThread
        // Each thread writes through one server, so events are made on both.
        let errors = runConcurrently(threads) { i in
            let client = try pair.client(i)
            for n in 0..<perThread {
                let r = try client.send(
                    "PUT", "/v1/subscribers/hooked-\(i)-\(n)", json: [:] as JSONDict, headers: backend)
                guard r.status == 201 else { throw TestFailure("thread \(i) upsert \(n): \(r.status) \(r.text)") }
            }
        }
        #expect(errors.isEmpty, "\(errors.prefix(3))")
        receiver.waitFor(tag: tag, seconds: 20) { $0.count >= total }
        // Longer than a poll of both workers: a second send of any event would arrive now.
        usleep(1_000_000)
        let events = receiver.events(tag: tag)
        let ids = events.compactMap { $0.string("id") }
        #expect(ids.count == total, "\(ids.count) requests for \(total) events")
        #expect(Set(ids).count == total, "an event was sent more than once")
        let expected = Set((0..<threads).flatMap { i in (0..<perThread).map { "hooked-\(i)-\($0)" } })
        #expect(Set(events.compactMap { $0.object("data")?.string("subscriberId") }) == expected)
        let checked = try receiver.verifySignatures(secret: secret, tag: tag)
        #expect(checked.valid == total && checked.invalid == 0)
        // The outbox agrees: one attempt per event, each succeeded.
        let outbox = try psql(
            pair.database.url,
            """
            SELECT count(*), count(DISTINCT event_id), max(attempt), bool_and(status = 'succeeded')
            FROM webhook_deliveries
            """)
        #expect(outbox == "\(total)|\(total)|1|t")
        // Both servers sent a share: the sharing was tested, not one worker alone.
        let sent = try [pair.onA, pair.onB].map { client -> Int in
            let text = try client.send("GET", "/metrics").text
            let line = text.split(separator: "\n").first {
                $0.hasPrefix("buzzkit_webhook_deliveries_total{result=\"succeeded\"}")
            }
            return line.flatMap { $0.split(separator: " ").last }.flatMap { Int($0) } ?? 0
        }
        #expect(sent.reduce(0, +) == total && sent.allSatisfy { $0 > 0 }, "sent by A and B: \(sent)")
    }

    @Test func serversStartingTogetherOnAnEmptyDatabaseMigrateOnce() throws {
        let database = try #require(try PostgresTestDatabase.make())
        defer { database.drop() }
        let key = "bk_ws_" + randomAlphanumerics(32)
        let servers = Mutex<[TestServer]>([])
        let errors = runConcurrently(3) { _ in
            let server = try TestServer.start(databasePath: database.url, workspaceKey: key)
            servers.withLock { $0.append(server) }
        }
        defer { for server in servers.withLock({ $0 }) { server.stop() } }
        #expect(errors.isEmpty, "\(errors)")
        let started = servers.withLock { $0 }
        #expect(started.count == 3)
        // Each migration recorded once, and every server serves the one schema.
        let ledger = try psql(database.url, "SELECT version, count(*) FROM schema_migrations GROUP BY version")
        let rows = ledger.split(separator: "\n")
        #expect(!rows.isEmpty)
        #expect(rows.allSatisfy { $0.hasSuffix("|1") }, "\(ledger)")
        let tenant = try #require(started.first).createTenant(name: "together")
        for server in started {
            let view = try HTTPClient(port: server.port).send("GET", "/v1/tenant", headers: tenant.backend)
            #expect(view.status == 200, "\(view.text)")
        }
        // The bootstrap workspace key made one workspace, not three.
        #expect(try psql(database.url, "SELECT count(*) FROM workspaces") == "1")
    }
}

/// Runs SQL with `psql` (independent of the server's own PostgreSQL code); rows one a line,
/// columns joined by `|`.
func psql(_ url: String, _ sql: String) throws -> String {
    let result = try runProcess("/usr/bin/env", ["psql", url, "-qAtX", "-v", "ON_ERROR_STOP=1", "-c", sql])
    guard result.status == 0 else { throw TestFailure("psql failed: \(result.stderr)") }
    return result.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
}

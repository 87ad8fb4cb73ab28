import Foundation
import Identity
import Postgres
import Synchronization
import TestSupport
import Testing

/// API.md §12 in process: two applications ("servers"), each with its own PostgreSQL store,
/// pool and caches, on one database. The end-to-end versions start two `buzzkit serve`.
@Suite(.enabled(if: PostgresTestDatabase.isAvailable, "BUZZKIT_TEST_POSTGRES_URL is not set"))
final class SeveralServersTests {
    let a: InProcessApp
    let b: InProcessApp
    let tenant: TestTenant

    init() throws {
        a = try InProcessApp(store: .postgres)
        b = try InProcessApp(sharing: a)
        tenant = try a.createTenant()
    }

    deinit {
        b.close()
        a.close()
    }

    @Test func aWriteOnOneIsReadAtOnceOnTheOther() throws {
        for i in 0..<60 {
            let (writer, reader) = i % 2 == 0 ? (a, b) : (b, a)
            expectOK(
                try writer.send(
                    "PATCH", "/v1/subscribers/user_1/attributes", json: ["attributes": ["n": i]],
                    headers: tenant.backend))
            let read = try reader.send("GET", "/v1/subscribers/user_1", headers: tenant.backend)
            expectOK(read)
            let attributes = read.subscriber?["attributes"] as? [String: Any]
            #expect(attributes?["n"] as? Int == i, "read \(i) on the other server")
        }
    }

    @Test func eventsThroughBothServersGetGaplessUniqueSeqs() throws {
        let subscriber = "user_events"
        expectOK(
            try a.send("PUT", "/v1/subscribers/\(subscriber)", json: ["attributes": [:]], headers: tenant.backend), 201)
        let failures = Mutex<[String]>([])
        let group = DispatchGroup()
        for worker in 0..<6 {
            group.enter()
            Thread { [a, b, tenant] in
                let app = worker % 2 == 0 ? a : b
                for batch in 0..<5 {
                    let events = (0..<4).map { ["id": "w\(worker)-b\(batch)-\($0)", "name": "tick"] }
                    let r = app.send(
                        "POST", "/v1/events",
                        body: Array(
                            try! JSONSerialization.data(withJSONObject: [
                                "subscriberId": subscriber, "events": events,
                            ])), headers: tenant.app.merging(["Content-Type": "application/json"]) { $1 })
                    if r.status != 200 { failures.withLock { $0.append("\(r.status) \(r.text)") } }
                }
                group.leave()
            }.start()
        }
        group.wait()
        #expect(failures.withLock { $0 }.isEmpty, "\(failures.withLock { $0 })")
        let timeline = try b.send("GET", "/v1/subscribers/\(subscriber)/events?limit=1000", headers: tenant.backend)
        let events = try #require(timeline.data?["events"] as? [[String: Any]])
        let seqs = events.compactMap { $0["seq"] as? Int }
        #expect(seqs == Array(1...120), "gapless and unique")
        #expect(Set(events.compactMap { $0["id"] as? String }).count == 120)
    }

    @Test func racingIdentifiesOfOneAnonymousIDThroughBothServersMergeOnce() throws {
        let anon = newAnonymousID()
        expectOK(
            a.send(
                "POST", "/v1/events",
                body: Array(
                    try JSONSerialization.data(withJSONObject: [
                        "subscriberId": anon, "events": [["id": "pre", "name": "opened"]],
                    ])), headers: tenant.app.merging(["Content-Type": "application/json"]) { $1 }))
        let shapes = Mutex<[String: String]>([:])
        let group = DispatchGroup()
        for i in 0..<8 {
            group.enter()
            Thread { [a, b, tenant] in
                let app = i % 2 == 0 ? a : b
                let r = try! app.send(
                    "POST", "/v1/identify", json: ["externalId": "racer_\(i)", "anonymousId": anon], headers: tenant.app
                )
                let merge = r.data?["merge"] as? [String: Any]
                shapes.withLock { $0["racer_\(i)"] = "\(r.status) \(merge?["shape"] as? String ?? "-")" }
                group.leave()
            }.start()
        }
        group.wait()
        let answers = shapes.withLock { $0 }
        #expect(answers.values.allSatisfy { $0.hasPrefix("200 ") }, "\(answers)")
        let winners = answers.filter { $0.value == "200 rename" }.map(\.key)
        try #require(winners.count == 1, "\(answers)")
        let owner = try b.send("GET", "/v1/subscribers/\(anon)", headers: tenant.backend)
        #expect(owner.subscriber?["id"] as? String == winners[0])
        let timeline = try a.send("GET", "/v1/subscribers/\(winners[0])/events", headers: tenant.backend)
        let ids = (timeline.data?["events"] as? [[String: Any]] ?? []).compactMap { $0["id"] as? String }
        #expect(ids.filter { $0 == "pre" }.count == 1)
    }

    @Test func aKeyRevokedOnOneServerIsRefusedOnTheOtherWithinASecond() throws {
        // B has the key in its auth cache.
        expectOK(try b.send("GET", "/v1/tenant", headers: tenant.backend))
        let listed = try a.send("GET", "/v1/keys", headers: tenant.backend)
        let keys = try #require(listed.data?["keys"] as? [[String: Any]])
        let secret = try #require(keys.first { $0["kind"] as? String == "secret" }?["id"] as? String)
        let revokedAt = Date()
        expectOK(try a.send("DELETE", "/v1/keys/\(secret)", headers: tenant.backend))
        var refused = false
        while Date().timeIntervalSince(revokedAt) < 1.0 {
            if try b.send("GET", "/v1/tenant", headers: tenant.backend).status == 401 {
                refused = true
                break
            }
            usleep(10_000)
        }
        #expect(refused, "still accepted on the other server 1 s after the revoke")
    }

    @Test func aSettingChangedOnOneServerShowsOnTheOtherWithinASecond() throws {
        expectOK(try b.send("GET", "/v1/tenant", headers: tenant.backend))
        let changedAt = Date()
        expectOK(try a.send("PATCH", "/v1/tenant", json: ["requireVerification": true], headers: tenant.backend))
        var seen = false
        while Date().timeIntervalSince(changedAt) < 1.0 {
            let r = try b.send("GET", "/v1/tenant", headers: tenant.backend)
            if r.tenant?["requireVerification"] as? Bool == true {
                seen = true
                break
            }
            usleep(10_000)
        }
        #expect(seen)
    }

    @Test func theUnverifiedCallCountCoversBothServers() throws {
        for app in [a, b] {
            for i in 0..<3 {
                expectOK(
                    try app.send(
                        "PATCH", "/v1/subscribers/user_\(i)/attributes", json: ["attributes": ["x": 1]],
                        headers: tenant.app))
            }
        }
        // Each store flushes its counts every 200 ms in tests (a minute in production).
        var counts: [Int] = []
        for _ in 0..<100 {
            counts = try [a, b].map { app in
                let r = try app.send("GET", "/v1/tenant", headers: tenant.backend)
                return (r.tenant?["stats"] as? [String: Any])?["unverifiedAppCalls24h"] as? Int ?? -1
            }
            if counts == [6, 6] { break }
            usleep(50_000)
        }
        #expect(counts == [6, 6])
    }

    @Test func aListenerThatDiesIsReopenedAndTheCacheFlushed() throws {
        expectOK(try b.send("GET", "/v1/tenant", headers: tenant.backend))
        let reconnects = { [b] in
            b.store.gauges().first { $0.name == "buzzkit_db_listener_reconnects_total" }?.value ?? -1
        }
        let before = reconnects()
        // End both servers' LISTEN sessions, as a database restart or a network cut would.
        let name = try #require(a.database.split(separator: "/").last?.split(separator: "?").first.map(String.init))
        let admin = try Connection(url: try #require(PostgresTestDatabase.serverURL))
        // The listeners connect on their own threads: wait until both listen.
        let listening = "SELECT count(*) FROM pg_stat_activity WHERE datname = $1 AND query LIKE 'LISTEN%'"
        for _ in 0..<250 where try admin.queryOne(listening, [name])!.int(0) < 2 { usleep(20_000) }
        let terminated = try admin.query(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND query LIKE 'LISTEN%'",
            [name])
        #expect(terminated.count == 2)
        var reopened = false
        for _ in 0..<150 where !reopened {
            usleep(20_000)
            reopened = reconnects() > before
        }
        #expect(reopened)
        // Coherent afterwards: a revoke on A still reaches B within the second.
        try aKeyRevokedOnOneServerIsRefusedOnTheOtherWithinASecond()
    }

    @Test func requestsAfterTheDatabaseDroppedEveryConnectionSucceed() throws {
        expectOK(
            try a.send("PUT", "/v1/subscribers/user_r", json: ["attributes": ["n": 1]], headers: tenant.backend), 201)
        // Every session of this database ends, as in a database restart: the pools hold dead connections.
        let name = try #require(a.database.split(separator: "/").last?.split(separator: "?").first.map(String.init))
        let admin = try Connection(url: try #require(PostgresTestDatabase.serverURL))
        let ended = try admin.query(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()",
            [name])
        #expect(ended.count > 2)
        // A write before COMMIT was sent is safe to run again on a fresh connection; a read too.
        expectOK(
            try a.send(
                "PATCH", "/v1/subscribers/user_r/attributes", json: ["attributes": ["n": 2]], headers: tenant.backend))
        let read = try a.send("GET", "/v1/subscribers/user_r", headers: tenant.backend)
        #expect((read.subscriber?["attributes"] as? [String: Any])?["n"] as? Int == 2, "\(read.text)")
    }
}

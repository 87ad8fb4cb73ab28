import Foundation
import Identity
import JSON
import Migrations
import SQLite
import Testing

@testable import Storage

/// The SQL one identify costs the writer, shape by shape (issue 14): each shape updates the
/// subscriber row at most once, and its statement count is the table in bench/README.md.
@Suite struct IdentifyWriteCountTests {
    let db: Database
    let ctx: SQLiteContext
    let tenant: TenantRecord
    let now = Timestamp(millis: 1_800_000_000_000)

    init() throws {
        let fixture = try TenantDatabase(prefix: "counts", now: now)
        (db, ctx, tenant) = (fixture.db, fixture.ctx, fixture.tenant)
        // A TEMP trigger runs inside the statement that fired it: it adds no statement run, and
        // sees every UPDATE of a subscriber row whichever code path issued it.
        try db.execute(
            """
            CREATE TEMP TABLE subscriber_updates (key INTEGER NOT NULL);
            CREATE TEMP TRIGGER count_subscriber_updates AFTER UPDATE ON main.subscribers
                BEGIN INSERT INTO subscriber_updates VALUES (NEW.key); END;
            """)
    }

    /// What one identify cost: statements run on the writer connection, and the most UPDATEs
    /// any one subscriber row took.
    private struct Cost: CustomStringConvertible {
        var statements: Int
        var mostUpdatesOfOneRow: Int
        var shape: MergeShape
        /// Runs per SQL text, for the failure message (`sqlite_stmt`, <https://sqlite.org/stmt.html>).
        var breakdown: [String: Int]
        var description: String {
            let lines = breakdown.sorted { $0.key < $1.key }.map { "  \($0.value)× \($0.key.prefix(70))" }
            return "\(shape.rawValue): \(statements) statements, \(mostUpdatesOfOneRow) updates\n"
                + lines.joined(separator: "\n")
        }
    }

    private func identify(_ command: IdentifyCommand, as role: Caller.Role = .backend) throws -> Cost {
        try db.execute("DELETE FROM temp.subscriber_updates")  // uncached: not counted below
        let runsBefore = try runsBySQL()
        let before = db.cachedStatementRuns
        let result = try db.transaction {
            try Operations.identify(command, caller: Caller(tenant: tenant, role: role), in: ctx, now: now)
        }
        let runs = db.cachedStatementRuns - before
        let counts = try #require(
            try db.queryOne(
                """
                SELECT coalesce(sum(n), 0) AS updates, coalesce(max(n), 0) AS most
                FROM (SELECT count(*) AS n FROM temp.subscriber_updates GROUP BY key)
                """
            ))
        let (updates, most) = (Int(try counts.requiredInt("updates")), Int(try counts.requiredInt("most")))
        // BEGIN and COMMIT go through the statement cache too, and each firing of the counting
        // trigger adds a run to the UPDATE that fired it (a trigger program starts with OP_Init,
        // which counts a run): neither is the identify's SQL.
        let statements = runs - 2 - updates
        var breakdown = try runsBySQL()
        for (sql, runs) in runsBefore { breakdown[sql, default: 0] -= runs }
        breakdown = breakdown.filter { $0.value > 0 && !$0.key.contains("sqlite_stmt") }
        return Cost(
            statements: statements, mostUpdatesOfOneRow: most, shape: result.merge?.shape ?? .none,
            breakdown: breakdown)
    }

    private func runsBySQL() throws -> [String: Int] {
        var runs: [String: Int] = [:]
        for row in try db.query("SELECT sql, run FROM sqlite_stmt") {
            runs[try row.requiredString("sql"), default: 0] += Int(try row.requiredInt("run"))
        }
        return runs
    }

    private func anonymous(_ n: Int) -> String { "anon_" + String(repeating: "0", count: 20) + String(n) }

    /// An anonymous subscriber as the SDK leaves it before login: an attribute, a device, an event.
    private func seedAnonymous(_ id: String) throws {
        let record = try ctx.insertSubscriber(tenantID: tenant.id, id: id, anonymous: true, now: now)
        try ctx.writeAttributes(
            key: record.key, [("theme", AttributeEntry(value: .string("dark"), setByBackend: false))])
        try ctx.upsertDevice(key: record.key, DeviceRecord(deviceID: "dev-\(id)", platform: "ios", lastSeenAt: now))
        _ = try ctx.insertEvent(
            key: record.key, seq: 1,
            NewEvent(clientID: "e1", name: "open", timestamp: now, receivedAt: now, propertiesJSON: nil))
        var saved = record
        saved.lastSeq = 1
        saved.eventCount = 1
        try ctx.updateSubscriber(saved)
    }

    private var profile: (JSONObject, DeviceRecord) {
        (["plan": .string("pro")], DeviceRecord(deviceID: "dev-x", platform: "ios", lastSeenAt: now))
    }

    @Test func everyShapeUpdatesTheSubscriberRowAtMostOnce() throws {
        let (attributes, device) = profile
        let secret = tenant.secrets.current
        func proof(_ id: String) -> IdentityProof {
            .hash(IdentityVerifier.identityHash(externalId: id, secret: secret))
        }
        try seedAnonymous(anonymous(1))
        try seedAnonymous(anonymous(2))
        try seedAnonymous(anonymous(3))
        _ = try identify(IdentifyCommand(externalID: "absorber"))
        _ = try identify(IdentifyCommand(externalID: "absorber-full"))

        let cases: [(String, IdentifyCommand, Caller.Role, MergeShape, Int)] = [
            ("new person, nothing else", IdentifyCommand(externalID: "p1"), .backend, .none, 4),
            (
                "new person with email, attributes, device",
                IdentifyCommand(externalID: "p2", email: "p2@example.com", attributes: attributes, device: device),
                .backend, .none, 9
            ),
            ("rename", IdentifyCommand(externalID: "r1", anonymousID: anonymous(1)), .backend, .rename, 8),
            (
                "rename, proven, with email, attributes, device",
                IdentifyCommand(
                    externalID: "r2", anonymousID: anonymous(2), email: "r2@example.com", proof: proof("r2"),
                    attributes: attributes, device: device),
                .app, .rename, 13
            ),
            ("absorb", IdentifyCommand(externalID: "absorber", anonymousID: anonymous(3)), .backend, .absorb, 29),
            ("link", IdentifyCommand(externalID: "l1", anonymousID: anonymous(4)), .backend, .link, 10),
            (
                "link with email, attributes, device",
                IdentifyCommand(
                    externalID: "absorber-full", anonymousID: anonymous(5), email: "a@example.com",
                    attributes: attributes, device: device),
                .backend, .link, 12
            ),
            ("retry", IdentifyCommand(externalID: "l1", anonymousID: anonymous(4)), .backend, .none, 2),
            (
                "retry with the same attributes and device",
                IdentifyCommand(
                    externalID: "absorber-full", anonymousID: anonymous(5), email: "a@example.com",
                    attributes: attributes, device: device),
                .backend, .none, 4
            ),
        ]
        // The counts include the webhook outbox's "is this event wanted" probe, one query per event
        // the call reports (created, merged, verified) on this bare context; the store's writer
        // answers it from its filter cache instead (SQLiteContext+Webhooks.swift). A merge's marker
        // event costs one more: the probe for absorbed events still moving in (migration 0006).
        var table: [String] = []
        for (name, command, role, shape, statements) in cases {
            let cost = try identify(command, as: role)
            table.append("| \(name) | \(cost.shape.rawValue) | \(cost.statements) | \(cost.mostUpdatesOfOneRow) |")
            #expect(cost.shape == shape, "\(name)")
            #expect(cost.mostUpdatesOfOneRow <= 1, "\(name): \(cost)")
            #expect(cost.statements == statements, "\(name): \(cost)")
        }
        print(table.joined(separator: "\n"))
    }

    @Test func aProvenRenameWithAProfileStillSavesEverything() throws {
        let (attributes, device) = profile
        try seedAnonymous(anonymous(7))
        let hash = IdentityVerifier.identityHash(externalId: "ada", secret: tenant.secrets.current)
        let cost = try identify(
            IdentifyCommand(
                externalID: "ada", anonymousID: anonymous(7), email: "ada@example.com", proof: .hash(hash),
                attributes: attributes, device: device),
            as: .app)
        #expect(cost.mostUpdatesOfOneRow == 1)
        // One UPDATE carries the rename, the proof, the email and the merge marker's sequence.
        let saved = try #require(try ctx.subscriber(tenantID: tenant.id, alias: "ada"))
        #expect(saved.id == "ada" && !saved.anonymous && saved.verified)
        #expect(saved.email == "ada@example.com")
        #expect(saved.lastSeq == 2 && saved.eventCount == 2 && saved.updatedAt == now)
        let names = try ctx.attributes(key: saved.key).map(\.name)
        #expect(names == ["email", "plan", "theme"])
        #expect(try ctx.devices(key: saved.key).map(\.deviceID) == ["dev-\(anonymous(7))", "dev-x"].sorted())
    }
}

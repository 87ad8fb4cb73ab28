import Foundation
import Postgres
import TestSupport
import Testing

/// CI must never skip PostgreSQL silently: `.ci/run` starts a server and exports its URL.
@Suite struct PostgresAvailabilityTests {
    @Test func ciHasATestServer() {
        let inCI = ProcessInfo.processInfo.environment["CI"] == "true"
        #expect(
            !inCI || PostgresTestDatabase.isAvailable,
            "CI=true but BUZZKIT_TEST_POSTGRES_URL is not set: start scripts/postgres-for-tests.sh")
    }

    @Test func replacesTheDatabaseInAURL() {
        #expect(
            PostgresTestDatabase.url("postgres://u:p@h:5/db?sslmode=disable", database: "x")
                == "postgres://u:p@h:5/x?sslmode=disable")
        #expect(PostgresTestDatabase.url("postgresql://u@h", database: "x") == "postgresql://u@h/x")
    }
}

@Suite(.enabled(if: PostgresTestDatabase.isAvailable, "BUZZKIT_TEST_POSTGRES_URL is not set"))
struct ConnectionTests {
    let database = try! PostgresTestDatabase.make()!
    var connection: Connection { get throws { try Connection(url: database.url) } }

    @Test func roundTripsTypedParameters() throws {
        let db = try connection
        try db.execute(
            "CREATE TABLE t(i bigint, s text, b boolean, d double precision, n text, x bytea, small integer)")
        let bytes: [UInt8] = [0, 1, 0x7f, 0x80, 0xff]
        let affected = try db.execute(
            "INSERT INTO t VALUES ($1, $2, $3, $4, $5, $6, $7)",
            [Int64.min, "héllo 'quoted' \\ \u{1F600}", true, -1.5e-7, String?.none, bytes, 42])
        #expect(affected == 1)
        let row = try #require(try db.queryOne("SELECT i, s, b, d, n, x, small FROM t"))
        #expect(try row.int(0) == Int64.min)
        #expect(try row.string(1) == "héllo 'quoted' \\ \u{1F600}")
        #expect(try row.bool(2) == true)
        #expect(try row.double(3) == -1.5e-7)
        #expect(try row.optionalString(4) == nil)
        #expect(row.isNull(4))
        #expect(try row.bytes(5) == bytes)
        #expect(try row.int(6) == 42)
        // The same SQL again reuses its prepared statement.
        _ = try db.queryOne("SELECT i, s, b, d, n, x, small FROM t")
        #expect(db.preparedSQL.filter { $0.hasPrefix("SELECT i, s") }.count == 1)
        let empty = try db.query("SELECT i FROM t WHERE s = $1", ["absent"])
        #expect(empty.isEmpty)
    }

    /// `textArray` writes PostgreSQL's array literal itself: every element must come back as sent,
    /// whatever it holds (the array syntax's own characters, escapes, `NULL` as text, non-ASCII).
    @Test func textArraysRoundTripEveryElement() throws {
        let db = try connection
        let items: [String?] = [
            "plain", "", "with space", "a,b", "{braces}", "say \"hi\"", "back\\slash", "\\\"", "NULL", nil,
            "héllo \u{1F600}", "tab\tand\nnewline",
        ]
        let rows = try db.query(
            "SELECT item FROM unnest($1::text[]) WITH ORDINALITY AS u(item, i) ORDER BY i",
            [PostgresValue.textArray(items)])
        #expect(try rows.map { try $0.optionalString(0) } == items)
        let none = try db.query("SELECT item FROM unnest($1::text[]) AS u(item)", [PostgresValue.textArray([])])
        #expect(none.isEmpty)
    }

    /// `integerArray` writes the `bigint[]` literal the snapshot reads bind: every key comes back.
    @Test func integerArraysRoundTripEveryElement() throws {
        let db = try connection
        let items: [Int64] = [1, 0, -7, 42, Int64.max, Int64.min]
        let rows = try db.query(
            "SELECT item FROM unnest($1::bigint[]) WITH ORDINALITY AS u(item, i) ORDER BY i",
            [PostgresValue.integerArray(items)])
        #expect(try rows.map { try $0.int(0) } == items)
        let none = try db.query("SELECT item FROM unnest($1::bigint[]) AS u(item)", [PostgresValue.integerArray([])])
        #expect(none.isEmpty)
    }

    /// A row's `xmin` (type `xid`) reads as an integer, the number its text form shows: the
    /// snapshot check rebuilds versions (`key:xmin`) from it.
    @Test func anXidColumnReadsAsTheIntegerItsTextShows() throws {
        let db = try connection
        try db.execute("CREATE TABLE v(k bigint)")
        try db.execute("INSERT INTO v VALUES (1)")
        let row = try #require(try db.queryOne("SELECT xmin, xmin::text FROM v"))
        let xmin = try row.int(0)
        #expect(xmin > 0)
        #expect(String(xmin) == (try row.string(1)))
        let wrapped = try #require(try db.queryOne("SELECT '4294967295'::xid"))
        #expect(try wrapped.int(0) == 4_294_967_295)
    }

    @Test func decodingFailsClosedOnNullAndWrongTypes() throws {
        let db = try connection
        let row = try #require(try db.queryOne("SELECT NULL::bigint AS missing, true AS flag, 'x'::text AS word"))
        let null = #expect(throws: PostgresError.self) { try row.int(0) }
        #expect(null?.message.contains("missing") == true)
        #expect(null?.message.contains("NULL") == true)
        #expect(try row.optionalInt(0) == nil)
        #expect(throws: PostgresError.self) { try row.int(1) }  // a boolean is not an integer
        #expect(throws: PostgresError.self) { try row.bool(2) }
        #expect(throws: PostgresError.self) { try row.optionalString(1) }
        #expect(throws: PostgresError.self) { try row.string(7) }  // no such column
    }

    @Test func errorsCarryTheSQLStateButNeverTheValues() throws {
        let db = try connection
        try db.execute("CREATE TABLE users(email text PRIMARY KEY)")
        try db.execute("INSERT INTO users VALUES ($1)", ["secret@example.com"])
        do {
            try db.execute("INSERT INTO users VALUES ($1)", ["secret@example.com"])
            Issue.record("a duplicate key was accepted")
        } catch PostgresError.uniqueViolation {
            // the pattern matches
        }
        let error = #expect(throws: PostgresError.self) {
            try db.execute("INSERT INTO users VALUES ($1)", ["secret@example.com"])
        }
        #expect(error?.sqlState == "23505")
        #expect(error?.isUniqueViolation == true)
        #expect(error?.sql == "INSERT INTO users VALUES ($1)")
        #expect(error.map { "\($0)" }?.contains("secret@example.com") == false)
        #expect(error.map { "\($0)" }?.contains("23505") == true)
        let syntax = #expect(throws: PostgresError.self) { try db.execute("SELEC 1", []) }
        #expect(syntax?.sqlState == "42601")
        #expect(!(syntax?.isRetryable ?? true))
    }

    @Test func failedConnectionsSayWhy() throws {
        let error = #expect(throws: PostgresError.self) {
            try Connection(url: "postgres://nobody@127.0.0.1:1/none?connect_timeout=2")
        }
        #expect(error?.isConnectionFailure == true)
    }

    @Test func notificationsArriveOnTheListeningConnection() throws {
        let listener = try connection
        let sender = try connection
        try listener.execute("LISTEN buzzkit_test")
        #expect(try listener.notifications(timeout: .milliseconds(10)).isEmpty)
        try sender.execute("SELECT pg_notify('buzzkit_test', $1)", ["hello"])
        var received: [PostgresNotification] = []
        for _ in 0..<50 where received.isEmpty {
            received = try listener.notifications(timeout: .milliseconds(100))
        }
        #expect(received.map(\.payload) == ["hello"])
        #expect(received.first?.channel == "buzzkit_test")
        #expect(received.first?.senderPID == sender.backendPID)
    }
}

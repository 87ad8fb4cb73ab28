import Foundation
import Postgres

/// A fresh, empty PostgreSQL database on the test server named by `BUZZKIT_TEST_POSTGRES_URL`
/// (see `scripts/postgres-for-tests.sh`), dropped on ``drop()`` or deinit.
///
/// ```swift
/// guard let database = try PostgresTestDatabase.make() else { return }  // no server configured
/// let connection = try Connection(url: database.url)
/// ```
package final class PostgresTestDatabase: @unchecked Sendable {
    /// The URL of the test server, when one is configured.
    package static var serverURL: String? {
        guard let url = ProcessInfo.processInfo.environment["BUZZKIT_TEST_POSTGRES_URL"], !url.isEmpty else {
            return nil
        }
        return url
    }

    /// True when tests should also run on PostgreSQL.
    package static var isAvailable: Bool { serverURL != nil }

    /// The database's name.
    package let name: String
    /// A URL reaching it.
    package let url: String
    private let adminURL: String
    private var dropped = false

    /// Creates a database with a unique name; nil when no test server is configured.
    package static func make() throws -> PostgresTestDatabase? {
        guard let serverURL else { return nil }
        return try PostgresTestDatabase(serverURL: serverURL)
    }

    private init(serverURL: String) throws {
        adminURL = serverURL
        name = "bk_test_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "").prefix(20)
        url = Self.url(serverURL, database: name)
        let admin = try Connection(url: serverURL)
        defer { admin.close() }
        try admin.execute("CREATE DATABASE \(name)")
    }

    deinit { drop() }

    /// Drops the database, disconnecting anyone still on it (PostgreSQL 13+ `WITH (FORCE)`).
    package func drop() {
        guard !dropped else { return }
        dropped = true
        guard let admin = try? Connection(url: adminURL) else { return }
        defer { admin.close() }
        try? admin.execute("DROP DATABASE IF EXISTS \(name) WITH (FORCE)")
    }

    /// `serverURL` with its database name replaced.
    package static func url(_ serverURL: String, database: String) -> String {
        guard let scheme = serverURL.range(of: "://") else { return serverURL + " dbname=\(database)" }
        let afterScheme = serverURL[scheme.upperBound...]
        let query = afterScheme.firstIndex(of: "?")
        let authority = afterScheme[..<(query ?? afterScheme.endIndex)]
        let hostPart = authority.firstIndex(of: "/").map { authority[..<$0] } ?? authority
        let suffix = query.map { String(afterScheme[$0...]) } ?? ""
        return String(serverURL[..<scheme.upperBound]) + hostPart + "/" + database + suffix
    }
}

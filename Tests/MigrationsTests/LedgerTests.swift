import Migrations
import Testing

/// The ledger check on its own: no database, just this binary's migrations against ledger rows.
@Suite struct LedgerTests {
    static let initial = Migration(version: 1, name: "initial", sql: "CREATE TABLE users(id integer);")
    static let addName = Migration(version: 2, name: "add_name", sql: "ALTER TABLE users ADD COLUMN name text;")
    static let seed = Migration(version: 3, name: "seed", sql: "INSERT INTO users VALUES (1);")

    /// A ledger row recording `migration` as applied unchanged.
    static func row(_ migration: Migration) -> AppliedMigration {
        AppliedMigration(version: migration.version, name: migration.name, checksum: migration.checksum)
    }

    @Test func returnsThePendingOnesInVersionOrder() throws {
        let all = [Self.seed, Self.initial, Self.addName]
        #expect(try pendingMigrations(all, applied: []).map(\.version) == [1, 2, 3])
        #expect(
            try pendingMigrations(all, applied: [Self.row(Self.initial)]).map(\.identifier) == [
                "0002_add_name", "0003_seed",
            ])
        // The ledger's order does not matter either.
        let done = [Self.row(Self.addName), Self.row(Self.initial), Self.row(Self.seed)]
        #expect(try pendingMigrations(all, applied: done).isEmpty)
        #expect(try sortedByVersion(all).map(\.version) == [1, 2, 3])
    }

    @Test func refusesTwoMigrationsWithOneVersion() {
        let again = Migration(version: 1, name: "again", sql: "")
        for check in [
            { try sortedByVersion([Self.initial, again]) },
            { try pendingMigrations([Self.initial, again], applied: []) },
        ] {
            let error = #expect(throws: MigrationError.self) { _ = try check() }
            #expect(error?.kind == .duplicateVersion)
            #expect(error?.description == "migrations 0001_initial and 0001_again have the same version 1")
        }
    }

    @Test func refusesALedgerNewerThanTheBinary() {
        let future = AppliedMigration(version: 7, name: "future", checksum: "0000000000000000")
        let error = #expect(throws: MigrationError.self) {
            try pendingMigrations([Self.initial], applied: [Self.row(Self.initial), future])
        }
        #expect(error?.kind == .unknownVersion)
        #expect(
            error?.description
                == "database is newer than this binary: it has migration(s) 0007_future that this binary "
                + "does not know; run a newer buzzkit")
    }

    @Test func refusesAnEditedMigration() {
        let edited = Migration(version: 2, name: "add_name", sql: "ALTER TABLE users ADD COLUMN name varchar;")
        #expect(edited.checksum != Self.addName.checksum)
        let error = #expect(throws: MigrationError.self) {
            try pendingMigrations([Self.initial, edited], applied: [Self.row(Self.initial), Self.row(Self.addName)])
        }
        #expect(error?.kind == .edited)
        #expect(
            error?.description
                == "migration 0002_add_name was edited after it was applied; "
                + "restore it and put the change in a new migration")
    }

    @Test func refusesARenamedMigration() {
        let renamed = Migration(version: 2, name: "add_full_name", sql: Self.addName.sql)
        #expect(renamed.checksum == Self.addName.checksum)
        let error = #expect(throws: MigrationError.self) {
            try pendingMigrations([Self.initial, renamed], applied: [Self.row(Self.initial), Self.row(Self.addName)])
        }
        #expect(error?.kind == .edited)
        #expect(error?.description == "migration 0002_add_name was renamed to 0002_add_full_name after it was applied")
    }

    @Test func refusesAMigrationNumberedBelowAnAppliedOne() {
        let error = #expect(throws: MigrationError.self) {
            try pendingMigrations(
                [Self.initial, Self.addName, Self.seed], applied: [Self.row(Self.initial), Self.row(Self.seed)])
        }
        #expect(error?.kind == .outOfOrder)
        #expect(
            error?.description
                == "migration 0002_add_name is numbered below the already applied 0003_seed; renumber it after the newest"
        )
    }

    @Test func describesTheUnderlyingErrorOfAFailedMigration() {
        struct EngineError: Error, CustomStringConvertible { var description: String { "syntax error" } }
        let error = MigrationError(.failed, "migration 0003_seed failed", underlying: EngineError())
        #expect(error.kind == .failed && error.kind != .foreignKeyViolation)
        #expect(error.description == "migration 0003_seed failed: syntax error")
        #expect(MigrationError(.foreignKeyViolation, "m").description == "m")
        #expect(MigrationError.Kind.foreignKeyViolation.description == "foreignKeyViolation")
    }
}

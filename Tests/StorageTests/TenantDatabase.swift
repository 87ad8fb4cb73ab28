import Foundation
import Identity
import SQLite

@testable import Storage

/// A freshly migrated SQLite file holding one workspace and one tenant, for suites that drive
/// `SQLiteContext` directly.
struct TenantDatabase {
    let db: Database
    let ctx: SQLiteContext
    let tenant: TenantRecord

    init(prefix: String, now: Timestamp) throws {
        let path = FileManager.default.temporaryDirectory
            .appendingPathComponent("\(prefix)-\(UUID().uuidString).sqlite").path
        db = try Database(path: path)
        _ = try Migrator(migrations: try SQLiteIdentityStore.bundledMigrations()).migrate(db)
        ctx = SQLiteContext(db: db)
        try ctx.insertWorkspace(id: "ws_test", name: "test", now: now)
        tenant = try Tenancy.createTenant(name: "acme", workspaceID: "ws_test", in: ctx, now: now).tenant
    }
}

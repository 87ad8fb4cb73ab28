import Glibc
import PostgresStorage
import Storage
import StoreCopy

/// `buzzkit copy --from DB --to DB` (API.md §11): one snapshot of a store into an empty one.
func copyStore(from: String, to: String) throws {
    guard from != to else { throw CLIError("--from and --to name the same database", status: 2) }
    let source = try copySource(from)
    let target = try copyTarget(to)
    let started = ContinuousClock.now
    print("copying \(redacted(from)) to \(redacted(to))")
    do {
        let counts = try StoreCopier().copy(from: source, to: target) { count in
            print("\(count.kind): \(count.target)")
        }
        let total = counts.reduce(0) { $0 + $1.target }
        print("copied \(total) rows in \(ContinuousClock.now - started); every count matches the source")
    } catch let error as StoreCopyError {
        throw CLIError("copy refused: \(error.message)")
    }
}

/// The reader for a `--from` value.
private func copySource(_ database: String) throws -> any CopySource {
    switch DatabaseLocation(database) {
    case .sqlite(let path):
        // Absorbed events still moving would be on neither person in the raw tables.
        if access(path, F_OK) == 0 { try SQLiteIdentityStore.finishEventMoves(path: path) }
        return try SQLiteCopySource(path: path, migrations: SQLiteIdentityStore.bundledMigrations())
    case .postgres(let url):
        return try PostgresCopySource(url: url, migrations: PostgresIdentityStore.bundledMigrations())
    }
}

/// The writer for a `--to` value.
private func copyTarget(_ database: String) throws -> any CopyTarget {
    switch DatabaseLocation(database) {
    case .sqlite(let path):
        try createParentDirectory(of: path)
        return SQLiteCopyTarget(path: path, migrations: try SQLiteIdentityStore.bundledMigrations())
    case .postgres(let url):
        return try PostgresCopyTarget(url: url, migrations: PostgresIdentityStore.bundledMigrations())
    }
}

/// A database named for a person: a URL's password replaced by `***`.
func redacted(_ database: String) -> String {
    let characters = Array(database)
    guard let schemeEnd = (0..<max(0, characters.count - 2)).first(where: { String(characters[$0..<$0 + 3]) == "://" }),
        let at = characters.lastIndex(of: "@"), at > schemeEnd,
        let colon = characters[(schemeEnd + 3)..<at].firstIndex(of: ":")
    else { return database }
    return String(characters[...colon]) + "***" + String(characters[at...])
}

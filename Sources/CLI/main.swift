import API
import Glibc
import HTTPServer
import Identity
import JSON
import SQLite
import Storage

// `buzzkit`: serve, migrate, tenant create, backup, identity-hash, copy (API.md §11).

let usage = """
    usage: buzzkit serve [--host H] [--port P] [--database PATH] [--config FILE]
           buzzkit migrate [--database PATH] [--config FILE]
           buzzkit tenant create NAME [--database PATH] [--config FILE]
           buzzkit backup DEST [--database PATH] [--config FILE]
           buzzkit identity-hash --secret S EXTERNAL_ID
           buzzkit copy --from DB --to DB
           buzzkit webhook-verify --secret S --id ID --timestamp T [--signature SIG] BODYFILE
    """

/// Splits `--flag value` pairs from positional arguments; every flag takes a value.
func parseFlags(_ arguments: ArraySlice<String>, allowed: Set<String>) throws -> (
    flags: [String: String], positional: [String]
) {
    var flags: [String: String] = [:]
    var positional: [String] = []
    var iterator = arguments.makeIterator()
    while let argument = iterator.next() {
        if argument.hasPrefix("--") {
            var name = String(argument.dropFirst(2))
            var value: String?
            if let equals = name.firstIndex(of: "=") {
                value = String(name[name.index(after: equals)...])
                name = String(name[..<equals])
            }
            guard allowed.contains(name) else { throw CLIError("unknown flag --\(name)\n\(usage)", status: 2) }
            guard let given = value ?? iterator.next() else { throw CLIError("--\(name) needs a value", status: 2) }
            flags[name] = given
        } else {
            positional.append(argument)
        }
    }
    return (flags, positional)
}

/// Config file, then environment, then flags.
func loadSettings(_ flags: [String: String]) throws -> Settings {
    var settings = Settings()
    try settings.apply(configFile: flags["config"] ?? "config/buzzkit.json", required: flags["config"] != nil)
    try settings.applyEnvironment()
    if let host = flags["host"] { settings.host = host }
    if let port = flags["port"] {
        guard let p = Int(port), (0...65535).contains(p) else { throw CLIError("--port must be 0 to 65535", status: 2) }
        settings.port = p
    }
    if let database = flags["database"] { settings.database = database }
    return settings
}

/// Writes a line to standard error (Glibc's `stderr` global is not concurrency-safe in Swift 6).
func printError(_ line: String) {
    let bytes = Array((line + "\n").utf8)
    _ = bytes.withUnsafeBytes { write(2, $0.baseAddress, $0.count) }
}

func printJSON(_ value: JSONValue) {
    print(value.jsonString)
}

func run(_ arguments: [String]) throws {
    guard let command = arguments.first else { throw CLIError(usage, status: 2) }
    let rest = arguments.dropFirst()
    switch command {
    case "serve":
        let (flags, positional) = try parseFlags(rest, allowed: ["host", "port", "database", "config"])
        guard positional.isEmpty else { throw CLIError(usage, status: 2) }
        try serve(try loadSettings(flags))

    case "migrate":
        // A server checks the schema once, at start: changing it under a running one is refused.
        // (backup and tenant create go through SQLite's own locking and work while served.)
        let (flags, _) = try parseFlags(rest, allowed: ["database", "config"])
        let settings = try loadSettings(flags)
        let lock = try serverLock(settings)
        defer { lock?.release() }
        let applied = try migrateStore(settings)
        print(applied.isEmpty ? "database is up to date" : "applied: \(applied.joined(separator: ", "))")

    case "tenant":
        let (flags, positional) = try parseFlags(rest, allowed: ["database", "config"])
        guard positional.count == 2, positional[0] == "create" else { throw CLIError(usage, status: 2) }
        let settings = try loadSettings(flags)
        let store = try openStore(settings)
        defer { store.close() }
        let name = positional[1]
        let bootstrapKey = settings.bootstrapWorkspaceKey
        let created = try writeAndWait(store) { ctx in
            let now = SystemClock().now()
            let workspaceID = try Tenancy.workspaceForNewTenant(bootstrapKey: bootstrapKey, in: ctx, now: now)
            return try Tenancy.createTenant(name: name, workspaceID: workspaceID, in: ctx, now: now)
        }
        printJSON([
            "tenant": ["id": .string(created.tenant.id), "name": .string(created.tenant.name)],
            "secretKey": .string(created.secretKey.plaintext), "clientKey": .string(created.clientKey.plaintext),
            "identitySecret": .string(created.identitySecret),
        ])

    case "backup":
        let (flags, positional) = try parseFlags(rest, allowed: ["database", "config"])
        guard positional.count == 1 else { throw CLIError(usage, status: 2) }
        let settings = try loadSettings(flags)
        let destination = positional[0]
        if case .postgres = DatabaseLocation(settings.database) {
            throw CLIError(
                "buzzkit backup copies SQLite files; for PostgreSQL use pg_dump "
                    + "(pg_dump --format=custom --file=\(destination) DATABASE_URL), or buzzkit copy to a SQLite file")
        }
        guard access(settings.database, F_OK) == 0 else { throw CLIError("no database at \(settings.database)") }
        guard access(destination, F_OK) != 0 else { throw CLIError("\(destination) exists; choose a new file") }
        try createParentDirectory(of: destination)
        // A read transaction pins one snapshot; the backup copies exactly it while writers go on.
        let pool = try DatabaseReaderPool(path: settings.database, count: 1)
        defer { pool.close() }
        try pool.read { db in try db.backup(to: destination) }
        let copy = try Database(
            path: destination,
            options: {
                var o = Database.Options(); o.readOnly = true; return o
            }())
        defer { copy.close() }
        let check = try copy.integrityCheck()
        guard check == ["ok"] else { throw CLIError("backup failed its integrity check: \(check.prefix(3))") }
        print("backup written to \(destination)")

    case "identity-hash":
        let (flags, positional) = try parseFlags(rest, allowed: ["secret"])
        guard let secret = flags["secret"], positional.count == 1 else { throw CLIError(usage, status: 2) }
        print(
            IdentityVerifier.identityHash(externalId: positional[0], secret: IdentityVerifier.key(fromSecret: secret)))

    case "copy":
        let (flags, positional) = try parseFlags(rest, allowed: ["from", "to"])
        guard positional.isEmpty, let from = flags["from"], let to = flags["to"] else {
            throw CLIError(usage, status: 2)
        }
        try copyStore(from: from, to: to)
    case "webhook-verify":
        try webhookVerify(rest)

    case "help", "--help", "-h":
        print(usage)

    default:
        throw CLIError("unknown command \(command)\n\(usage)", status: 2)
    }
}

do {
    try run(Array(CommandLine.arguments.dropFirst()))
} catch let error as SQLiteError where error.isReadOnly || error.code == 14 /* SQLITE_CANTOPEN */ {
    // The operator's fix is file permissions, not SQL: say that, without the statement.
    printError(
        "buzzkit: cannot write the database (\(error.message), SQLite code \(error.extendedCode)). "
            + "buzzkit needs write access to the database file and its folder: the WAL and -shm files live beside it.")
    exit(1)
} catch let error as CLIError {
    printError("buzzkit: \(error.message)")
    exit(error.status)
} catch {
    printError("buzzkit: \(error)")
    exit(1)
}

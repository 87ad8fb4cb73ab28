import CSQLite
import Glibc

/// What a checkpoint saw: the WAL's length in frames (pages) and how many of them are now in
/// the database file.
package struct CheckpointResult: Sendable, Hashable {
    package var logFrames: Int
    package var checkpointedFrames: Int
}

/// WAL checkpoint modes (<https://www.sqlite.org/c3ref/wal_checkpoint_v2.html>).
package enum CheckpointMode: Sendable, Hashable {
    /// Copy as much of the WAL as possible without waiting for readers or writers.
    case passive
    /// Wait for writers, then copy the whole WAL.
    case full
    /// Like `.full`, then wait for readers so the next writer restarts the WAL from the start.
    case restart
    /// Like `.restart`, then truncate the WAL file to zero bytes.
    case truncate

    var rawValue: Int32 {
        switch self {
        case .passive: SQLITE_CHECKPOINT_PASSIVE
        case .full: SQLITE_CHECKPOINT_FULL
        case .restart: SQLITE_CHECKPOINT_RESTART
        case .truncate: SQLITE_CHECKPOINT_TRUNCATE
        }
    }
}

extension Database {
    /// Whether the main schema has a table of that name (a migration may not have run yet).
    package func hasTable(_ name: String) throws -> Bool {
        try queryOne("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", [name]) != nil
    }

    /// Copies WAL content back into the database file (`sqlite3_wal_checkpoint_v2`).
    ///
    /// A no-op for databases not in WAL mode. `.full`, `.restart` and `.truncate` throw
    /// `SQLITE_BUSY` when readers or another writer prevented them from completing.
    /// - Parameter mode: See ``CheckpointMode``.
    @discardableResult
    package func checkpoint(_ mode: CheckpointMode = .passive) throws -> CheckpointResult {
        guard let handle else { throw SQLiteError.misuse("database connection is closed") }
        var logFrames: Int32 = 0
        var checkpointedFrames: Int32 = 0
        let result = sqlite3_wal_checkpoint_v2(handle, nil, mode.rawValue, &logFrames, &checkpointedFrames)
        guard result == SQLITE_OK else {
            throw SQLiteError(connection: handle, resultCode: result, sql: "wal_checkpoint(\(mode))")
        }
        return CheckpointResult(logFrames: Int(logFrames), checkpointedFrames: Int(checkpointedFrames))
    }

    /// How long this connection waits on a lock before `SQLITE_BUSY` from now on.
    package func setBusyTimeout(_ timeout: Duration) {
        guard let handle else { return }
        let milliseconds = timeout.components.seconds * 1000 + timeout.components.attoseconds / 1_000_000_000_000_000
        sqlite3_busy_timeout(handle, Int32(clamping: milliseconds))
    }

    /// Copies this database into the file at `path` with the online backup API
    /// (<https://www.sqlite.org/backup.html>), replacing its content.
    ///
    /// Run it inside a read transaction (e.g. ``DatabaseReaderPool/read(_:)``) to copy one
    /// consistent snapshot while the writer keeps writing: in WAL mode a reader blocks nobody.
    /// Outside one, a write by another connection between steps restarts the copy.
    /// `SQLITE_BUSY`/`SQLITE_LOCKED` are retried after a short sleep.
    /// - Parameters:
    ///   - path: The destination file (created if absent).
    ///   - pagesPerStep: Pages copied per `sqlite3_backup_step`; `-1` copies all at once.
    package func backup(to path: String, pagesPerStep: Int32 = 256) throws {
        guard let source = handle else { throw SQLiteError.misuse("database connection is closed") }
        var options = Options()
        options.journalModeWAL = false  // the copy takes the source's journal mode from its header
        let destination = try Database(path: path, options: options)
        defer { destination.close() }
        guard let target = destination.handle else { throw SQLiteError.misuse("backup destination is closed") }
        guard let backup = sqlite3_backup_init(target, "main", source, "main") else {
            throw SQLiteError(connection: target, resultCode: sqlite3_errcode(target), sql: "backup to \(path)")
        }
        while true {
            let result = sqlite3_backup_step(backup, pagesPerStep)
            switch result {
            case SQLITE_OK:
                continue
            case SQLITE_DONE:
                break
            case SQLITE_BUSY, SQLITE_LOCKED:
                usleep(5_000)
                continue
            default:
                sqlite3_backup_finish(backup)
                throw SQLiteError(connection: target, resultCode: result, sql: "backup to \(path)")
            }
            break
        }
        let result = sqlite3_backup_finish(backup)
        guard result == SQLITE_OK else {
            throw SQLiteError(connection: target, resultCode: result, sql: "backup to \(path)")
        }
    }

    /// Runs `PRAGMA integrity_check` (<https://www.sqlite.org/pragma.html#pragma_integrity_check>).
    /// - Returns: `["ok"]` for a sound database, otherwise one line per problem found.
    package func integrityCheck() throws -> [String] {
        try query("PRAGMA integrity_check").map { $0.string(0) ?? "" }
    }
}

import CSQLite
import Glibc

/// A VFS over SQLite's default one that writes a commit's log frames with one `pwrite`.
///
/// SQLite appends each frame to the WAL with two writes, its 24-byte header and then its page,
/// each a system call: ~60 of them for a group of 26 identifies, 15 % of the writer thread's
/// time under a flood, where one `pwrite` of the same bytes costs a fifth as much (1.65 against
/// 0.32 µs a frame on this disk). This VFS gathers consecutive writes to a log in memory and
/// writes them as one, at the latest when the commit's last frame is complete:
/// - The last frame of a commit is the only one whose header carries a database size (bytes 4–7
///   of the frame header, https://www.sqlite.org/fileformat.html#wal_file_format). The write of
///   the page after such a header writes out everything gathered, inside that `xWrite`, so a
///   failure is the commit's own error, as it would be unbatched.
/// - Every other call on the log or on its database file writes out what is gathered before it
///   runs: reading a frame back, the log's size, a sync, and the database file's `xShmBarrier`,
///   which SQLite calls between the two copies of the wal-index header that publish a commit to
///   other connections. So no connection can see a frame that is not in the file yet, and a
///   crash loses only frames of a commit that had not returned, as without the batching.
///
/// Only the writer's connection uses it (``Database/Options/batchesLogWrites``); its files are
/// the default VFS's files, so locks and the shared wal-index are the same for every connection.
enum BatchedLogVFS {
    /// The VFS's registered name, or why it could not be registered.
    static let name: Result<String, SQLiteError> = register()

    /// Most bytes gathered before they are written anyway (a bulk transaction's log). The default
    /// VFS writes at most 128 KiB a call: it masks the size of a larger write with `0x1ffff` and
    /// then fails the rest as `SQLITE_FULL` (`seekAndWriteFd` in SQLite's os_unix.c).
    static let capacity = 120 << 10

    /// What this connection's log has done so far, or nil when the connection does not use this
    /// VFS or has no log open. For tests.
    static func logStatistics(_ handle: OpaquePointer) -> (writes: Int, publishedWithBytesPending: Int)? {
        var pointer: UnsafeMutableRawPointer?
        guard sqlite3_file_control(handle, "main", SQLITE_FCNTL_FILE_POINTER, &pointer) == SQLITE_OK,
            let file = pointer?.assumingMemoryBound(to: sqlite3_file.self), file.pointee.pMethods == methods,
            let log = BatchedFile.of(file).log
        else { return nil }
        return (log.writeCalls, log.barriersWithBytesPending)
    }

    private static let vfsName = "buzzkit-batched-log"

    private static func register() -> Result<String, SQLiteError> {
        guard let base = sqlite3_vfs_find(nil) else {
            return .failure(SQLiteError.misuse("no default SQLite VFS to batch log writes over"))
        }
        let vfs = UnsafeMutablePointer<sqlite3_vfs>.allocate(capacity: 1)
        vfs.initialize(to: sqlite3_vfs())
        vfs.pointee.iVersion = 2
        vfs.pointee.szOsFile = Int32(BatchedFile.baseOffset) + base.pointee.szOsFile
        vfs.pointee.mxPathname = base.pointee.mxPathname
        vfs.pointee.zName = UnsafePointer(strdup(vfsName))
        vfs.pointee.pAppData = UnsafeMutableRawPointer(base)
        vfs.pointee.xOpen = openFile
        // Everything else is the default VFS's, called with its own `sqlite3_vfs`.
        vfs.pointee.xDelete = { vfs, name, syncDir in wrapped(vfs).pointee.xDelete(wrapped(vfs), name, syncDir) }
        vfs.pointee.xAccess = { vfs, name, flags, out in wrapped(vfs).pointee.xAccess(wrapped(vfs), name, flags, out) }
        vfs.pointee.xFullPathname = { vfs, name, size, out in
            wrapped(vfs).pointee.xFullPathname(wrapped(vfs), name, size, out)
        }
        vfs.pointee.xDlOpen = { vfs, name in wrapped(vfs).pointee.xDlOpen(wrapped(vfs), name) }
        vfs.pointee.xDlError = { vfs, size, out in wrapped(vfs).pointee.xDlError(wrapped(vfs), size, out) }
        vfs.pointee.xDlSym = { vfs, handle, symbol in wrapped(vfs).pointee.xDlSym(wrapped(vfs), handle, symbol) }
        vfs.pointee.xDlClose = { vfs, handle in wrapped(vfs).pointee.xDlClose(wrapped(vfs), handle) }
        vfs.pointee.xRandomness = { vfs, size, out in wrapped(vfs).pointee.xRandomness(wrapped(vfs), size, out) }
        vfs.pointee.xSleep = { vfs, microseconds in wrapped(vfs).pointee.xSleep(wrapped(vfs), microseconds) }
        vfs.pointee.xCurrentTime = { vfs, out in wrapped(vfs).pointee.xCurrentTime(wrapped(vfs), out) }
        vfs.pointee.xGetLastError = { vfs, size, out in wrapped(vfs).pointee.xGetLastError(wrapped(vfs), size, out) }
        vfs.pointee.xCurrentTimeInt64 = { vfs, out in wrapped(vfs).pointee.xCurrentTimeInt64(wrapped(vfs), out) }
        let result = sqlite3_vfs_register(vfs, 0)
        guard result == SQLITE_OK else {
            return .failure(SQLiteError(extendedCode: result, message: "could not register the \(vfsName) VFS"))
        }
        return .success(vfsName)
    }

    /// Opens the default VFS's file after our header and puts our methods in front of it.
    private static let openFile:
        @convention(c) (
            UnsafeMutablePointer<sqlite3_vfs>?, UnsafePointer<CChar>?, UnsafeMutablePointer<sqlite3_file>?, Int32,
            UnsafeMutablePointer<Int32>?
        ) -> Int32 = { vfs, name, file, flags, outFlags in
            let file = file!
            let real = BatchedFile.realFile(file)
            let result = wrapped(vfs).pointee.xOpen(wrapped(vfs), name, real, flags, outFlags)
            guard result == SQLITE_OK else {
                // SQLite closes only a file whose methods are set; ours are not, so close theirs.
                if let close = real.pointee.pMethods?.pointee.xClose { _ = close(real) }
                file.pointee.pMethods = nil
                return result
            }
            let state = BatchedFile(real: real)
            if flags & SQLITE_OPEN_WAL != 0, let name, let database = sqlite3_database_file_object(name),
                database.pointee.pMethods == BatchedLogVFS.methods
            {
                let owner = BatchedFile.of(database)
                owner.log = state
                state.database = owner
            }
            UnsafeMutableRawPointer(file).storeBytes(
                of: Unmanaged.passRetained(state).toOpaque(), toByteOffset: BatchedFile.stateOffset,
                as: UnsafeMutableRawPointer.self)
            file.pointee.pMethods = methods
            return SQLITE_OK
        }

    /// The methods of every file this VFS opens: each writes out the gathered log first (see
    /// the type's note), then calls the default file's own.
    nonisolated(unsafe) static let methods: UnsafePointer<sqlite3_io_methods> = {
        var m = sqlite3_io_methods()
        m.iVersion = 3
        m.xClose = { file in
            let state = BatchedFile.of(file!)
            let flushed = state.flushLog()
            let closed = state.real.pointee.pMethods.pointee.xClose(state.real)
            state.unlink()
            Unmanaged.passUnretained(state).release()
            return flushed != SQLITE_OK ? flushed : closed
        }
        m.xRead = { file, buffer, amount, offset in BatchedFile.forward(file) { $0.xRead($1, buffer, amount, offset) } }
        m.xWrite = { file, data, amount, offset in
            BatchedFile.borrowing(file!) { $0.write(data!, Int(amount), offset) }
        }
        m.xTruncate = { file, size in BatchedFile.forward(file) { $0.xTruncate($1, size) } }
        m.xSync = { file, flags in BatchedFile.forward(file) { $0.xSync($1, flags) } }
        m.xFileSize = { file, size in BatchedFile.forward(file) { $0.xFileSize($1, size) } }
        m.xLock = { file, lock in BatchedFile.forward(file) { $0.xLock($1, lock) } }
        m.xUnlock = { file, lock in BatchedFile.forward(file) { $0.xUnlock($1, lock) } }
        m.xFileControl = { file, op, argument in BatchedFile.forward(file) { $0.xFileControl($1, op, argument) } }
        // Questions about the file, not its contents: nothing to write out first.
        m.xCheckReservedLock = { file, out in BatchedFile.ask(file) { $0.xCheckReservedLock($1, out) } }
        m.xSectorSize = { file in BatchedFile.ask(file) { $0.xSectorSize($1) } }
        m.xDeviceCharacteristics = { file in BatchedFile.ask(file) { $0.xDeviceCharacteristics($1) } }
        // The shared-memory and memory-map methods exist from version 2 and 3 of a file's
        // methods on: a file whose own methods lack one answers as SQLite does without it.
        m.xShmMap = { file, region, size, extend, out in
            BatchedFile.forward(file) { methods, real in
                methods.xShmMap.map { $0(real, region, size, extend, out) } ?? SQLITE_IOERR
            }
        }
        m.xShmLock = { file, offset, count, flags in
            BatchedFile.forward(file) { methods, real in
                methods.xShmLock.map { $0(real, offset, count, flags) } ?? SQLITE_IOERR
            }
        }
        m.xShmBarrier = { file in
            // Publishes a commit: its frames must be in the file first. A failure here has no
            // caller; it stays the log's error for its next call.
            let state = BatchedFile.of(file!)
            state.flushLogKeepingError()
            state.real.pointee.pMethods.pointee.xShmBarrier?(state.real)
        }
        m.xShmUnmap = { file, delete in
            BatchedFile.forward(file) { methods, real in methods.xShmUnmap.map { $0(real, delete) } ?? SQLITE_OK }
        }
        m.xFetch = { file, offset, amount, out in
            BatchedFile.forward(file) { methods, real in
                guard let fetch = methods.xFetch else {
                    out?.pointee = nil
                    return SQLITE_OK
                }
                return fetch(real, offset, amount, out)
            }
        }
        m.xUnfetch = { file, offset, pointer in
            BatchedFile.forward(file) { methods, real in
                methods.xUnfetch.map { $0(real, offset, pointer) } ?? SQLITE_OK
            }
        }
        let pointer = UnsafeMutablePointer<sqlite3_io_methods>.allocate(capacity: 1)
        pointer.initialize(to: m)
        return UnsafePointer(pointer)
    }()
}

/// The default VFS that ``BatchedLogVFS`` wraps (its `pAppData`).
private func wrapped(_ vfs: UnsafeMutablePointer<sqlite3_vfs>?) -> UnsafeMutablePointer<sqlite3_vfs> {
    vfs!.pointee.pAppData.assumingMemoryBound(to: sqlite3_vfs.self)
}

/// One file of ``BatchedLogVFS``. SQLite allocates `szOsFile` bytes for it and hands their
/// address to every method: the `sqlite3_file` SQLite reads (our methods), a pointer to this
/// object, then the default VFS's file. Used by one connection's thread at a time.
private final class BatchedFile {
    static let stateOffset = MemoryLayout<sqlite3_file>.stride
    /// Where the default VFS's file starts, aligned for any of its fields.
    static let baseOffset = (stateOffset + MemoryLayout<UnsafeMutableRawPointer>.stride + 15) & ~15

    static func realFile(_ file: UnsafeMutablePointer<sqlite3_file>) -> UnsafeMutablePointer<sqlite3_file> {
        (UnsafeMutableRawPointer(file) + baseOffset).assumingMemoryBound(to: sqlite3_file.self)
    }

    static func of(_ file: UnsafeMutablePointer<sqlite3_file>) -> BatchedFile {
        unmanaged(file).takeUnretainedValue()
    }

    /// `body` on the file's object without counting a reference to it: the file holds one for as
    /// long as it is open, and `of` cost a retain and a release on every call SQLite makes.
    static func borrowing<Result>(
        _ file: UnsafeMutablePointer<sqlite3_file>, _ body: (BatchedFile) -> Result
    ) -> Result {
        unmanaged(file)._withUnsafeGuaranteedRef(body)
    }

    private static func unmanaged(_ file: UnsafeMutablePointer<sqlite3_file>) -> Unmanaged<BatchedFile> {
        let state = UnsafeMutableRawPointer(file).load(fromByteOffset: stateOffset, as: UnsafeMutableRawPointer.self)
        return Unmanaged<BatchedFile>.fromOpaque(state)
    }

    let real: UnsafeMutablePointer<sqlite3_file>
    /// A database file's log, while both are open: what its `xShmBarrier` writes out.
    var log: BatchedFile?
    /// A log's database file (which outlives it: SQLite closes the log first).
    unowned(unsafe) var database: BatchedFile? {
        didSet { isBatchedLog = database != nil }
    }
    /// Whether this file is a log linked to its database file: kept apart from `database`,
    /// whose every read retained and released it (each `xWrite` asks).
    private var isBatchedLog = false
    /// The gathered bytes, written at `pendingOffset` of the log.
    private var pending: UnsafeMutableRawPointer?
    private var pendingCount = 0
    private var pendingOffset: Int64 = 0
    /// The last write was a commit frame's header: the next one, its page, ends the commit.
    private var commitPageNext = false
    /// An error of a write-out no caller could be told of (`xShmBarrier`).
    private var deferredError = SQLITE_OK
    /// `pwrite` calls this log made (tests count them).
    private(set) var writeCalls = 0
    /// Commits published (`xShmBarrier`) while bytes were still gathered: the commit frame was
    /// not recognised, and only the barrier wrote them out. Zero unless SQLite's frames change.
    private(set) var barriersWithBytesPending = 0

    init(real: UnsafeMutablePointer<sqlite3_file>) { self.real = real }

    deinit { pending?.deallocate() }

    /// Forwards a call to the default file (its methods, the file) after writing out the log
    /// it may read or publish.
    static func forward(
        _ file: UnsafeMutablePointer<sqlite3_file>?,
        _ call: (sqlite3_io_methods, UnsafeMutablePointer<sqlite3_file>) -> Int32
    ) -> Int32 {
        borrowing(file!) { state in
            let flushed = state.flushLog()
            guard flushed == SQLITE_OK else { return flushed }
            return call(state.real.pointee.pMethods.pointee, state.real)
        }
    }

    /// Calls the default file for a question about it, not its contents: nothing to write out.
    static func ask(
        _ file: UnsafeMutablePointer<sqlite3_file>?,
        _ call: (sqlite3_io_methods, UnsafeMutablePointer<sqlite3_file>) -> Int32
    ) -> Int32 {
        let real = borrowing(file!) { $0.real }
        return call(real.pointee.pMethods.pointee, real)
    }

    /// The log whose bytes this file's calls must write out first: itself, or a database file's log.
    private var gatheredLog: BatchedFile? { isBatchedLog ? self : log }

    /// Writes out the gathered log (see `gatheredLog`).
    func flushLog() -> Int32 {
        if isBatchedLog { return flush() }
        return log?.flush() ?? SQLITE_OK
    }

    /// `flushLog` where no caller can be told of a failure: the error stays the log's.
    func flushLogKeepingError() {
        guard let target = gatheredLog else { return }
        if target.pendingCount > 0 { target.barriersWithBytesPending += 1 }
        let result = target.flush()
        if result != SQLITE_OK && target.deferredError == SQLITE_OK { target.deferredError = result }
    }

    /// Ends the link between a log and its database file, whichever closes.
    func unlink() {
        if let database, database.log === self { database.log = nil }
        database = nil
        log?.database = nil
        log = nil
    }

    func write(_ data: UnsafeRawPointer, _ amount: Int, _ offset: Int64) -> Int32 {
        guard isBatchedLog else { return real.pointee.pMethods.pointee.xWrite(real, data, Int32(amount), offset) }
        if deferredError != SQLITE_OK { return deferredError }
        let follows = pendingCount == 0 || offset == pendingOffset + Int64(pendingCount)
        if !follows || pendingCount + amount > BatchedLogVFS.capacity {
            let flushed = flush()
            guard flushed == SQLITE_OK else { return flushed }
        }
        let endsCommit = commitPageNext
        commitPageNext = Self.isCommitFrameHeader(data, amount)
        guard amount <= BatchedLogVFS.capacity else {
            writeCalls += 1
            return real.pointee.pMethods.pointee.xWrite(real, data, Int32(amount), offset)
        }
        let buffer = pending ?? UnsafeMutableRawPointer.allocate(byteCount: BatchedLogVFS.capacity, alignment: 16)
        pending = buffer
        if pendingCount == 0 { pendingOffset = offset }
        (buffer + pendingCount).copyMemory(from: data, byteCount: amount)
        pendingCount += amount
        return endsCommit ? flush() : SQLITE_OK
    }

    /// A frame header is 24 bytes; bytes 4–7 hold the database size in pages after a commit, and
    /// are zero in every other frame.
    private static func isCommitFrameHeader(_ data: UnsafeRawPointer, _ amount: Int) -> Bool {
        amount == 24 && data.loadUnaligned(fromByteOffset: 4, as: UInt32.self) != 0
    }

    /// Writes the gathered bytes. Once a write-out failed where no caller could be told, every
    /// later call on the log fails with that error: what reached the file is no longer known.
    private func flush() -> Int32 {
        if deferredError != SQLITE_OK { return deferredError }
        guard pendingCount > 0, let pending else { return SQLITE_OK }
        let count = pendingCount
        pendingCount = 0
        writeCalls += 1
        return real.pointee.pMethods.pointee.xWrite(real, pending, Int32(count), pendingOffset)
    }
}

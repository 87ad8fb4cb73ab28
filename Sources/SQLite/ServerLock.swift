import Glibc
import Synchronization

/// An advisory lock on a sidecar `<database>.lock` file, held by the one process that serves a
/// database, for that process's life.
///
/// SQLite's own locks let several processes share a file, and that is right for offline tools (a
/// backup, `tenant create`), but a server keeps caches that only its own writes keep coherent: a
/// second server on the same file would serve stale snapshots and keys. `flock` is released by
/// the kernel when the process exits however it exits (SIGKILL included), so a crash never leaves
/// a stale lock behind; the file only records the holder's pid for the refusal message.
///
/// ```swift
/// let lock = try ServerLock(databasePath: "data/buzzkit.sqlite")   // throws when served
/// defer { lock.release() }
/// ```
package final class ServerLock: Sendable {
    /// Why the lock was not taken.
    package struct Refusal: Error, Sendable, CustomStringConvertible {
        /// The lock file.
        package var path: String
        /// The holder's pid as it recorded it, when readable.
        package var holderPID: Int32?
        /// `errno` when the lock file could not even be opened; nil when another process holds it.
        package var errno: Int32?

        package var description: String {
            if let errno {
                return "cannot open the lock file \(path): \(String(cString: strerror(errno)))"
            }
            let holder = holderPID.map { "process \($0)" } ?? "another process"
            return "\(path) is held by \(holder): another buzzkit serve is using this database. "
                + "One server per SQLite file; stop it first (offline commands such as backup and tenant create still work)."
        }
    }

    /// The lock file's path: the database's path plus `.lock`.
    package let path: String
    /// The open lock file; -1 once released.
    private let descriptor: Atomic<Int32>

    /// Takes the lock without waiting.
    /// - Parameter databasePath: The SQLite file; the lock file is created beside it.
    /// - Throws: ``Refusal`` when another process holds it or the file cannot be opened.
    package init(databasePath: String) throws(Refusal) {
        path = databasePath + ".lock"
        let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw Refusal(path: path, holderPID: nil, errno: Glibc.errno) }
        var result: Int32
        repeat { result = flock(fd, LOCK_EX | LOCK_NB) } while result != 0 && Glibc.errno == EINTR
        guard result == 0 else {
            let failure = Glibc.errno
            let holder = Self.recordedPID(fd)
            close(fd)
            throw Refusal(path: path, holderPID: holder, errno: failure == EWOULDBLOCK ? nil : failure)
        }
        // Only the holder writes, so the pid read by a refused process is the holder's.
        let pid = Array("\(getpid())\n".utf8)
        _ = ftruncate(fd, 0)
        _ = pid.withUnsafeBytes { pwrite(fd, $0.baseAddress, $0.count, 0) }
        descriptor = Atomic(fd)
    }

    /// Gives the lock up (closing the descriptor drops it). The file stays: removing it would let
    /// a process that opened the old file and one that creates a new one both "hold" a lock.
    /// Idempotent.
    package func release() {
        let fd = descriptor.exchange(-1, ordering: .acquiringAndReleasing)
        if fd >= 0 { close(fd) }
    }

    deinit { release() }

    private static func recordedPID(_ fd: Int32) -> Int32? {
        var bytes = [UInt8](repeating: 0, count: 16)
        let count = bytes.withUnsafeMutableBytes { pread(fd, $0.baseAddress, $0.count, 0) }
        guard count > 0 else { return nil }
        return Int32(String(decoding: bytes[..<count], as: UTF8.self).filter(\.isNumber))
    }
}

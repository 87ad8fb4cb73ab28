import Foundation

#if canImport(Darwin)
    import Darwin
#elseif canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// An exclusive `flock(2)` on the storage directory: one client at a time owns a queue, so two
/// (a second `BuzzKitClient` on the same folder, an app extension) never interleave appends.
/// The kernel releases it when the process dies, so a killed app's relaunch gets it back.
final class StorageLock: @unchecked Sendable {
    private let lock = NSLock()
    private var descriptor: Int32

    init(directory: URL) throws {
        let path = directory.appendingPathComponent("lock").path
        let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw StorageError("open \(path): errno \(errno)") }
        guard flock(fd, LOCK_EX | LOCK_NB) == 0 else {
            close(fd)
            throw StorageError("\(directory.path) is in use by another BuzzKit client")
        }
        descriptor = fd
    }

    /// Lets another client take the folder.
    func release() {
        lock.lock()
        defer { lock.unlock() }
        guard descriptor >= 0 else { return }
        close(descriptor)
        descriptor = -1
    }

    deinit { release() }
}

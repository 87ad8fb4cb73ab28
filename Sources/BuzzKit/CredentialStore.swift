import Foundation

#if canImport(Darwin)
    import Darwin
#elseif canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// Where the device's identity lives between launches: the anonymous id, the external id and its
/// proof (hash or token). Files in the storage directory by default; an iOS app may keep it in
/// the Keychain by passing its own implementation in `Configuration.credentialStore`.
public protocol CredentialStore: Sendable {
    /// The data saved under `key`, or nil.
    func load(_ key: String) throws -> Data?
    /// Saves `data` under `key` durably before returning; nil removes it.
    func save(_ data: Data?, for key: String) throws
}

/// A `CredentialStore` of one file per key, replaced atomically and synced.
public struct FileCredentialStore: CredentialStore {
    public let directory: URL

    public init(directory: URL) {
        self.directory = directory
    }

    public func load(_ key: String) throws -> Data? {
        let url = directory.appendingPathComponent(key)
        guard FileManager.default.fileExists(atPath: url.path) else { return nil }
        return try Data(contentsOf: url)
    }

    public func save(_ data: Data?, for key: String) throws {
        let url = directory.appendingPathComponent(key)
        guard let data else {
            try? FileManager.default.removeItem(at: url)
            return
        }
        // Write a sibling, sync it, then move it over the old one: a crash keeps one whole version.
        let temporary = directory.appendingPathComponent(key + ".tmp")
        try? FileManager.default.removeItem(at: temporary)
        guard FileManager.default.createFile(atPath: temporary.path, contents: nil) else {
            throw StorageError("cannot create \(temporary.path)")
        }
        let handle = try FileHandle(forWritingTo: temporary)
        try handle.write(contentsOf: data)
        try handle.synchronize()
        try handle.close()
        // rename(2) replaces atomically (POSIX); FileManager's replace does not promise it.
        guard rename(temporary.path, url.path) == 0 else { throw StorageError("rename \(url.path): errno \(errno)") }
    }
}

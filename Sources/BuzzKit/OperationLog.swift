import Foundation

#if canImport(Darwin)
    import Darwin
#elseif canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// The kinds of record in the queue's log.
enum RecordKind: UInt8, Sendable {
    /// Defines an identity (`epoch`): the ids and proof later operations are sent under.
    case epoch = 1
    case identify = 2
    case attributes = 3
    case event = 4
    case pushRegister = 5
    case pushDelete = 6
    case preferences = 7
    /// Every operation with `seq` at most this record's is done (sent, or dropped as refused).
    case ack = 100
    /// Every *event* with `seq` at most this record's was dropped to keep the queue bounded.
    case dropEvents = 101
    /// The one operation with this `seq` is done, ahead of those before it (an identify).
    case done = 102
}

/// One record: fixed header fields and a body (JSON text for operations and epochs).
struct Record: Sendable, Equatable {
    var kind: RecordKind
    var seq: UInt64
    var epoch: UInt32
    /// Milliseconds since 1970 when it was queued.
    var createdAt: Int64
    /// The body; empty for a queued event, whose body stays in the file (`bodyOffset`, `bodyLength`)
    /// so that 100,000 queued events do not each hold their JSON in memory.
    var body: [UInt8]
    /// Where the body starts in the log file, and its length.
    var bodyOffset: UInt64 = 0
    var bodyLength: Int = 0

    init(kind: RecordKind, seq: UInt64, epoch: UInt32, createdAt: Int64, body: [UInt8]) {
        self.kind = kind
        self.seq = seq
        self.epoch = epoch
        self.createdAt = createdAt
        self.body = body
        bodyLength = body.count
    }
}

/// Errors of the queue's file.
public struct StorageError: Error, CustomStringConvertible {
    public var description: String
    init(_ description: String) { self.description = description }
}

/// The queue on disk: an append-only file of length-prefixed, checksummed records.
///
/// `track()` costs one `write` (and with `.synchronous` durability one `fsync`) of a record of
/// about a hundred bytes: nothing is rewritten, nothing parsed. Acknowledgements are records too.
/// A torn tail (power lost mid-write) fails its checksum and is cut off at load. When everything
/// is acknowledged, or the acknowledged prefix gets large, the live records are copied to a new
/// file that atomically replaces the old one.
///
/// Layout of a record: `length u32 LE | crc32 u32 LE | kind u8 | seq u64 LE | epoch u32 LE |
/// createdAt i64 LE | body`, where `length` counts from `kind` to the end of `body`.
final class OperationLog {
    let url: URL
    /// Swapped only by `replace`, which like `append` runs under the client's lock, and under
    /// `syncLock`, so a group commit running outside the client's lock never syncs a closed file.
    private var handle: FileHandle
    /// Bytes in the file.
    private(set) var size: UInt64
    /// Serializes `fsync`s: whoever holds it syncs for everyone who wrote before it started.
    private let syncLock = NSLock()
    /// Guards `written` and `synced`: positions in the current file's byte stream.
    private let counterLock = NSLock()
    private var written: UInt64
    private var synced: UInt64
    /// For reading queued events' bodies back.
    private var reader: FileHandle?

    static let fixedHeader = 4 + 4 + 1 + 8 + 4 + 8

    /// Opens (or creates) the log, returning it with the records that survived.
    static func open(at url: URL) throws -> (OperationLog, [Record]) {
        let manager = FileManager.default
        // A compaction that did not reach its rename left this behind; the old file is still whole.
        try? manager.removeItem(at: url.appendingPathExtension("new"))
        if !manager.fileExists(atPath: url.path) {
            guard manager.createFile(atPath: url.path, contents: nil) else {
                throw StorageError("cannot create \(url.path)")
            }
        }
        let data = try Data(contentsOf: url)
        let (records, goodLength) = decode(data)
        let handle = try FileHandle(forUpdating: url)
        if goodLength < data.count {
            // A torn last record: cut it off so the next append starts on a record boundary.
            try handle.truncate(atOffset: UInt64(goodLength))
            try handle.synchronize()
        }
        try handle.seekToEnd()
        return (OperationLog(url: url, handle: handle, size: UInt64(goodLength)), records)
    }

    private init(url: URL, handle: FileHandle, size: UInt64) {
        self.url = url
        self.handle = handle
        self.size = size
        written = size
        synced = size
    }

    deinit {
        try? handle.close()
        try? reader?.close()
    }

    /// Appends `records` in one `write`; returns the position to pass to `sync(through:)` for
    /// them to be on disk. Callers serialize appends (the client's lock).
    @discardableResult
    func append(_ records: [Record]) throws -> UInt64 {
        try appendLocating(records).position
    }

    /// `append`, also returning where each record's body landed in the file.
    func appendLocating(_ records: [Record]) throws -> (position: UInt64, bodyOffsets: [UInt64]) {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(records.reduce(0) { $0 + OperationLog.fixedHeader + $1.body.count })
        var offsets: [UInt64] = []
        offsets.reserveCapacity(records.count)
        for record in records {
            offsets.append(size + UInt64(bytes.count + OperationLog.fixedHeader))
            OperationLog.encode(record, into: &bytes)
        }
        try handle.write(contentsOf: bytes)
        size += UInt64(bytes.count)
        counterLock.lock()
        written += UInt64(bytes.count)
        let end = written
        counterLock.unlock()
        return (end, offsets)
    }

    /// The file's bytes from `start` to `end` (bodies of queued events). Callers serialize with
    /// appends (the client's lock); a separate handle keeps the append position untouched.
    func read(from start: UInt64, to end: UInt64) throws -> [UInt8] {
        if reader == nil { reader = try FileHandle(forReadingFrom: url) }
        try reader!.seek(toOffset: start)
        let data = try reader!.read(upToCount: Int(end - start)) ?? Data()
        guard data.count == Int(end - start) else { throw StorageError("short read of \(url.path)") }
        return [UInt8](data)
    }

    /// Returns once everything up to `position` is on disk. Group commit: callers that wrote while
    /// another one's `fsync` ran share the next one, so concurrent callers pay about one flush
    /// together instead of one each. Safe to call without the client's lock.
    func sync(through position: UInt64) throws {
        syncLock.lock()
        defer { syncLock.unlock() }
        counterLock.lock()
        let target = written
        let done = synced >= position
        counterLock.unlock()
        if done { return }
        try handle.synchronize()
        counterLock.lock()
        synced = max(synced, target)
        counterLock.unlock()
    }

    /// `fsync` whatever was written so far (grouped durability's timer, flush).
    func syncAll() throws {
        counterLock.lock()
        let position = written
        counterLock.unlock()
        try sync(through: position)
    }

    /// Replaces the whole log with `records`: written to a sibling file, synced, renamed over
    /// the log (atomic), so a crash leaves either the old file or the new one, never a mix.
    @discardableResult
    func replace(with records: [Record]) throws -> [UInt64] {
        let newURL = url.appendingPathExtension("new")
        var bytes: [UInt8] = []
        var offsets: [UInt64] = []
        for record in records {
            offsets.append(UInt64(bytes.count + OperationLog.fixedHeader))
            OperationLog.encode(record, into: &bytes)
        }
        let manager = FileManager.default
        try? manager.removeItem(at: newURL)
        guard manager.createFile(atPath: newURL.path, contents: nil) else {
            throw StorageError("cannot create \(newURL.path)")
        }
        let newHandle = try FileHandle(forWritingTo: newURL)
        try newHandle.write(contentsOf: bytes)
        try newHandle.synchronize()
        syncLock.lock()
        defer { syncLock.unlock() }
        try? handle.close()
        // rename(2) replaces the old file atomically (POSIX), which FileManager does not promise.
        guard rename(newURL.path, url.path) == 0 else {
            try? newHandle.close()
            throw StorageError("rename \(newURL.path): errno \(errno)")
        }
        handle = newHandle
        try handle.seekToEnd()
        size = UInt64(bytes.count)
        counterLock.lock()
        // Everything in the new file is on disk; a position from the old file is covered by it.
        written = size
        synced = size
        counterLock.unlock()
        try? reader?.close()
        reader = nil
        syncDirectory()
        return offsets
    }

    /// Makes the rename durable: the directory entry is what changed.
    private func syncDirectory() {
        if let directory = try? FileHandle(forReadingFrom: url.deletingLastPathComponent()) {
            try? directory.synchronize()
            try? directory.close()
        }
    }

    // MARK: - Encoding

    static func encode(_ record: Record, into bytes: inout [UInt8]) {
        let length = UInt32(1 + 8 + 4 + 8 + record.body.count)
        let start = bytes.count
        appendLittleEndian(length, &bytes)
        appendLittleEndian(UInt32(0), &bytes)
        let payloadStart = bytes.count
        bytes.append(record.kind.rawValue)
        appendLittleEndian(record.seq, &bytes)
        appendLittleEndian(record.epoch, &bytes)
        appendLittleEndian(UInt64(bitPattern: record.createdAt), &bytes)
        bytes.append(contentsOf: record.body)
        let crc = CRC32.checksum(bytes[payloadStart...])
        withUnsafeBytes(of: crc.littleEndian) { raw in
            for index in 0..<4 { bytes[start + 4 + index] = raw[index] }
        }
    }

    /// The records of `data` up to the first damaged one, and the length they span.
    static func decode(_ data: Data) -> ([Record], Int) {
        let bytes = [UInt8](data)
        var records: [Record] = []
        var offset = 0
        while offset + fixedHeader <= bytes.count {
            let length = Int(readLittleEndian(UInt32.self, bytes, offset))
            let crc = readLittleEndian(UInt32.self, bytes, offset + 4)
            let payload = offset + 8
            guard length >= 21, payload + length <= bytes.count,
                CRC32.checksum(bytes[payload..<payload + length]) == crc,
                let kind = RecordKind(rawValue: bytes[payload])
            else { break }
            var record = Record(
                kind: kind, seq: readLittleEndian(UInt64.self, bytes, payload + 1),
                epoch: readLittleEndian(UInt32.self, bytes, payload + 9),
                createdAt: Int64(bitPattern: readLittleEndian(UInt64.self, bytes, payload + 13)),
                body: Array(bytes[payload + 21..<payload + length]))
            record.bodyOffset = UInt64(payload + 21)
            records.append(record)
            offset = payload + length
        }
        return (records, offset)
    }

    private static func appendLittleEndian<T: FixedWidthInteger>(_ value: T, _ bytes: inout [UInt8]) {
        withUnsafeBytes(of: value.littleEndian) { bytes.append(contentsOf: $0) }
    }

    private static func readLittleEndian<T: FixedWidthInteger>(_: T.Type, _ bytes: [UInt8], _ offset: Int) -> T {
        var value: T = 0
        for index in 0..<MemoryLayout<T>.size { value |= T(bytes[offset + index]) << (8 * index) }
        return value
    }
}

/// CRC-32 (IEEE 802.3), to tell a whole record from a torn one. An integrity check, not security.
enum CRC32 {
    private static let table: [UInt32] = (0..<256).map { index in
        var value = UInt32(index)
        for _ in 0..<8 { value = value & 1 == 1 ? 0xEDB8_8320 ^ (value >> 1) : value >> 1 }
        return value
    }

    static func checksum(_ bytes: ArraySlice<UInt8>) -> UInt32 {
        var crc: UInt32 = 0xFFFF_FFFF
        for byte in bytes { crc = table[Int((crc ^ UInt32(byte)) & 0xFF)] ^ (crc >> 8) }
        return crc ^ 0xFFFF_FFFF
    }
}

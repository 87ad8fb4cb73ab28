import Identity
import SQLite
import Synchronization

/// One event waiting in `webhook_outbox` for its first attempt.
struct OutboxEvent: Sendable, Equatable {
    var id: String
    var type: String
    /// The event's createdAt, Unix ms; its first attempt is due then.
    var createdAt: Int64
    /// The event's `data`, compact JSON.
    var data: String
}

/// The text of an outbox row's `events` column: one line per event, `id TAB type TAB createdAt
/// TAB data`. Compact JSON never holds a raw tab or newline (JSON escapes control characters in
/// strings and compact output has no whitespace between tokens), nor do ids, types or numbers.
enum OutboxRowText {
    struct Malformed: Error, CustomStringConvertible {
        var description: String
    }

    /// Refuses an event a line cannot hold. Checked when the event is queued, so a bad one fails
    /// its own job, not the group whose rows are written at its commit.
    static func check(_ event: OutboxEvent) throws {
        try refuseSeparators(event.id)
        try refuseSeparators(event.type)
        try refuseSeparators(event.data)
    }

    private static func refuseSeparators(_ field: String) throws {
        var field = field
        try field.withUTF8 { utf8 in
            for byte in utf8 where byte == tab || byte == newline {
                throw Malformed(
                    description:
                        "an outbox field holds a tab or a newline: \(String(decoding: utf8.prefix(80), as: UTF8.self))"
                )
            }
        }
    }

    /// The lines of events that passed ``check(_:)``.
    static func encode(_ events: [OutboxEvent]) -> String {
        // Built as bytes with one allocation: on the request path, where appending to a String
        // and searching each field with `contains` cost as much as the row's insert.
        var size = 0
        for event in events { size += event.id.utf8.count + event.type.utf8.count + event.data.utf8.count + 24 }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(size)
        for event in events {
            append(event.id, to: &bytes)
            bytes.append(tab)
            append(event.type, to: &bytes)
            bytes.append(tab)
            append(String(event.createdAt), to: &bytes)
            bytes.append(tab)
            append(event.data, to: &bytes)
            bytes.append(newline)
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    private static func append(_ field: String, to bytes: inout [UInt8]) {
        var field = field
        field.withUTF8 { bytes.append(contentsOf: $0) }
    }

    static func decode(_ text: String) throws -> [OutboxEvent] {
        try text.utf8.split(separator: newline).map { line in
            let fields = line.split(separator: tab, maxSplits: 3, omittingEmptySubsequences: false)
            guard fields.count == 4, let createdAt = Int64(String(decoding: fields[2], as: UTF8.self)) else {
                throw Malformed(description: "webhook_outbox.events has a line that does not decode")
            }
            return OutboxEvent(
                id: String(decoding: fields[0], as: UTF8.self), type: String(decoding: fields[1], as: UTF8.self),
                createdAt: createdAt, data: String(decoding: fields[3], as: UTF8.self))
        }
    }

    private static let tab = UInt8(ascii: "\t")
    private static let newline = UInt8(ascii: "\n")
}

/// The SQLite store's outbox on its writer (bench/README.md, "Webhook outbox"). What it holds
/// belongs to the one writer connection and is touched only on its thread:
///
/// - **The group's events.** A job's events wait here by endpoint. When the job's savepoint is
///   released they join its group's; when it rolls back they are dropped. Just before the group
///   commits they are written as one `webhook_outbox` row per endpoint (at most
///   ``eventsPerRow`` events each): one insert for a whole group's identifies, where every event
///   was an insert of its own.
/// - **Delivery keys.** Every attempt's key (its `dlv_` id) is handed out here, so an event has its
///   key while it waits in the outbox and keeps it when its first attempt is recorded in
///   `webhook_deliveries`. Keys are never reused: the next is one past the largest in either
///   table when the writer first needs one, then counted in memory (a rolled-back group leaves a gap).
/// - **The last rows read**, decoded: outbox rows never change once written, and the worker
///   records a batch's attempts one by one, most of them from the same row.
final class OutboxWriter: Sendable {
    /// Events by endpoint, in order of the endpoint's first event.
    typealias Buffer = [(endpointKey: Int64, events: [OutboxEvent])]

    /// Most events in one outbox row: a row is decoded whole whenever one of its events is
    /// claimed or recorded.
    static let eventsPerRow = 64

    private struct State {
        var job: Buffer = []
        var group: Buffer = []
        var lastKey: Int64?
        /// The last rows decoded, by key.
        var decoded: [(key: Int64, events: [OutboxEvent])] = []
    }
    private let state = Mutex(State())

    func append(_ event: OutboxEvent, endpointKey: Int64) {
        state.withLock { Self.add([event], endpointKey: endpointKey, to: &$0.job) }
    }

    /// A job's savepoint ended: its events join the group's if its work was kept.
    func jobEnded(kept: Bool) {
        state.withLock { state in
            if kept {
                for (endpointKey, events) in state.job { Self.add(events, endpointKey: endpointKey, to: &state.group) }
            }
            state.job.removeAll(keepingCapacity: true)
        }
    }

    /// The group's events, by endpoint; the buffer is left empty.
    func takeGroup() -> Buffer {
        state.withLock { state in
            defer { state.group.removeAll(keepingCapacity: true) }
            return state.group
        }
    }

    /// The group ended, committed or rolled back: nothing of it is left here.
    func groupEnded() {
        state.withLock { state in
            state.job.removeAll(keepingCapacity: true)
            state.group.removeAll(keepingCapacity: true)
        }
    }

    private static func add(_ events: [OutboxEvent], endpointKey: Int64, to buffer: inout Buffer) {
        if let index = buffer.firstIndex(where: { $0.endpointKey == endpointKey }) {
            buffer[index].events.append(contentsOf: events)
        } else {
            buffer.append((endpointKey, events))
        }
    }

    /// Hands out `count` consecutive delivery keys; returns the first.
    func reserveKeys(_ count: Int, in db: Database) throws -> Int64 {
        let known = state.withLock { $0.lastKey }
        let last = try known ?? Self.largestKey(in: db)
        state.withLock { $0.lastKey = last + Int64(count) }
        return last + 1
    }

    /// The largest delivery key stored, for a context without a writer's ``OutboxWriter``.
    static func largestKey(in db: Database) throws -> Int64 {
        let largest = try db.firstRow(
            """
            SELECT max(coalesce((SELECT max(key) FROM webhook_deliveries), 0),
                       coalesce((SELECT max(key) FROM webhook_outbox), 0))
            """
        ) { $0.int(at: 0) }
        return (largest ?? nil) ?? 0
    }

    /// The events of a row decoded earlier, if it is among the last few.
    func decodedEvents(key: Int64) -> [OutboxEvent]? {
        state.withLock { state in state.decoded.first { $0.key == key }?.events }
    }

    func keepDecoded(_ events: [OutboxEvent], key: Int64) {
        state.withLock { state in
            if state.decoded.count >= 4 { state.decoded.removeFirst() }
            state.decoded.append((key, events))
        }
    }
}

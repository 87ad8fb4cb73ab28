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

    static func encode(_ events: [OutboxEvent]) throws -> String {
        // Built as bytes with one allocation: on the request path, where appending to a String
        // and searching each field with `contains` cost as much as the row's insert.
        var size = 0
        for event in events { size += event.id.utf8.count + event.type.utf8.count + event.data.utf8.count + 24 }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(size)
        for event in events {
            try append(event.id, to: &bytes)
            bytes.append(tab)
            try append(event.type, to: &bytes)
            bytes.append(tab)
            try append(String(event.createdAt), to: &bytes)
            bytes.append(tab)
            try append(event.data, to: &bytes)
            bytes.append(newline)
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    private static func append(_ field: String, to bytes: inout [UInt8]) throws {
        var field = field
        try field.withUTF8 { utf8 in
            for byte in utf8 where byte == tab || byte == newline {
                throw Malformed(
                    description:
                        "an outbox field holds a tab or a newline: \(String(decoding: utf8.prefix(80), as: UTF8.self))")
            }
            bytes.append(contentsOf: utf8)
        }
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

/// The SQLite store's outbox on its writer (bench/README.md, "Webhook outbox"). Two things that
/// belong to the one writer connection:
///
/// - **The job's events.** A write job's events wait here, by endpoint, and are written when the
///   job ends (inside its savepoint) as one `webhook_outbox` row per endpoint: identify's
///   `subscriber.created` and `subscriber.merged` cost one insert, not two. Jobs run one at a time
///   on the writer's thread, so one buffer serves them all; each job starts it empty.
/// - **Delivery keys.** Every attempt's key (its `dlv_` id) is handed out here, so an event has its
///   key while it waits in the outbox and keeps it when its first attempt is recorded in
///   `webhook_deliveries`. Keys are never reused: the next is one past the largest in either
///   table when the writer first needs one, then counted in memory (a rolled-back group leaves a gap).
final class OutboxWriter: Sendable {
    private struct State {
        var pending: [(endpointKey: Int64, events: [OutboxEvent])] = []
        var lastKey: Int64?
    }
    private let state = Mutex(State())

    /// A job starts: whatever a failed job left is dropped (its savepoint rolled back).
    func startJob() {
        state.withLock { $0.pending.removeAll(keepingCapacity: true) }
    }

    func append(_ event: OutboxEvent, endpointKey: Int64) {
        state.withLock { state in
            if let index = state.pending.firstIndex(where: { $0.endpointKey == endpointKey }) {
                state.pending[index].events.append(event)
            } else {
                state.pending.append((endpointKey, [event]))
            }
        }
    }

    /// The events waiting, by endpoint in order of first use; the buffer is left empty.
    func take() -> [(endpointKey: Int64, events: [OutboxEvent])] {
        state.withLock { state in
            defer { state.pending.removeAll(keepingCapacity: true) }
            return state.pending
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
        let largest = try db.queryOne(
            """
            SELECT max(coalesce((SELECT max(key) FROM webhook_deliveries), 0),
                       coalesce((SELECT max(key) FROM webhook_outbox), 0))
            """
        ) { $0.int(at: 0) }
        return (largest ?? nil) ?? 0
    }
}

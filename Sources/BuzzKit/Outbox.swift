import Foundation

/// The identity an operation was queued under: its subscriber and the proof sent with it.
struct IdentityStamp: Codable, Sendable, Equatable {
    var anonymousId: String
    var externalId: String?
    var identityHash: String?
    var identityToken: String?

    /// The id the server knows this subscriber by: the external id once identified.
    var subscriberId: String { externalId ?? anonymousId }
}

/// A run of operations sent as one request: one operation, or consecutive events of one identity.
struct Batch: Sendable {
    var kind: RecordKind
    var epoch: UInt32
    var identity: IdentityStamp
    var records: [Record]
    /// An identify sent ahead of its anonymous identity's queued work (`Outbox.nextBatch`).
    var ahead = false
    var firstSeq: UInt64 { records.first!.seq }
    var lastSeq: UInt64 { records.last!.seq }
}

/// The persisted FIFO of operations: the log on disk and the pending part of it in memory.
///
/// One sequence number orders every operation; delivery takes them from the head only, so order
/// holds within an identity and across identity changes. Not thread-safe: the client's lock guards it.
final class Outbox {
    private let log: OperationLog
    private(set) var epochs: [UInt32: IdentityStamp] = [:]
    private(set) var currentEpoch: UInt32 = 0
    private var pending: [Record] = []
    private var head = 0
    /// Index from which to look for the oldest event still queued (bounded-queue drops).
    private var eventScan = 0
    private(set) var nextSeq: UInt64 = 1
    private var ackedThrough: UInt64 = 0
    private var droppedThrough: UInt64 = 0
    private(set) var queuedEvents = 0
    /// Events dropped because the queue was full, since this process started.
    private(set) var droppedEvents = 0
    /// The range of the batch being retried, kept so a retry sends the same request (same key).
    private var frozenEnd: UInt64?
    /// Identify operations acknowledged ahead of the operations before them.
    private var doneAhead: Set<UInt64> = []
    let maxEvents: Int

    init(url: URL, maxEvents: Int) throws {
        self.maxEvents = maxEvents
        let (log, records) = try OperationLog.open(at: url)
        self.log = log
        var operations: [Record] = []
        for record in records {
            switch record.kind {
            case .epoch:
                epochs[record.epoch] = try JSONDecoder().decode(IdentityStamp.self, from: Data(record.body))
                currentEpoch = max(currentEpoch, record.epoch)
            case .ack: ackedThrough = max(ackedThrough, record.seq)
            case .done: doneAhead.insert(record.seq)
            case .dropEvents: droppedThrough = max(droppedThrough, record.seq)
            default: operations.append(record)
            }
            nextSeq = max(nextSeq, record.seq + 1)
        }
        pending = operations.filter { $0.seq > ackedThrough && !isDropped($0) && !doneAhead.contains($0.seq) }
        for index in pending.indices where pending[index].kind == .event { pending[index].body = [] }
        queuedEvents = pending.count { $0.kind == .event }
    }

    private func isDropped(_ record: Record) -> Bool { record.kind == .event && record.seq <= droppedThrough }

    /// Whether an operation is still to be sent.
    func hasWork() -> Bool {
        skipDropped()
        return head < pending.count
    }
    var pendingCount: Int { pending.count - head }
    var logSize: UInt64 { log.size }

    // MARK: - Appending

    /// A record that starts a new identity; later operations are stamped with it.
    func newEpoch(_ identity: IdentityStamp) -> Record {
        currentEpoch += 1
        epochs[currentEpoch] = identity
        let body = (try? JSONEncoder().encode(identity)).map { [UInt8]($0) } ?? []
        return Record(kind: .epoch, seq: 0, epoch: currentEpoch, createdAt: 0, body: body)
    }

    /// An operation under the current identity, numbered next.
    func operation(_ kind: RecordKind, body: [UInt8], createdAt: Int64) -> Record {
        defer { nextSeq += 1 }
        return Record(kind: kind, seq: nextSeq, epoch: currentEpoch, createdAt: createdAt, body: body)
    }

    /// Writes `records` in one append, then takes their operations into the queue; drops the
    /// oldest events if that makes it too long. Returns the position for `sync(through:)`.
    @discardableResult
    func append(_ records: [Record]) throws -> UInt64 {
        var all = records
        let newEvents = records.count { $0.kind == .event }
        var dropped: [Int] = []
        var dropThrough: UInt64 = 0
        if newEvents > 0, queuedEvents + newEvents > maxEvents {
            // Oldest first: find the events that go, so one record says "dropped through seq X".
            var excess = queuedEvents + newEvents - maxEvents
            var index = max(eventScan, head)
            while excess > 0, index < pending.count {
                if pending[index].kind == .event {
                    dropped.append(index)
                    dropThrough = pending[index].seq
                    excess -= 1
                }
                index += 1
            }
            if dropThrough > 0 {
                all.append(Record(kind: .dropEvents, seq: dropThrough, epoch: 0, createdAt: 0, body: []))
            }
        }
        let (position, offsets) = try log.appendLocating(all)
        if dropThrough > 0 {
            droppedThrough = dropThrough
            droppedEvents += dropped.count
            queuedEvents -= dropped.count
            eventScan = (dropped.last ?? eventScan) + 1
        }
        for (index, record) in records.enumerated() where record.kind != .epoch {
            var queued = record
            if record.kind == .event {
                // The body is in the file now; memory keeps only where.
                queued.bodyOffset = offsets[index]
                queued.body = []
                queuedEvents += 1
            }
            pending.append(queued)
        }
        return position
    }

    /// Returns once the log is on disk up to `position`; callable without the client's lock.
    func sync(through position: UInt64) throws { try log.sync(through: position) }

    /// `fsync` everything written so far (grouped durability); callable without the client's lock.
    func sync() throws { try log.syncAll() }

    // MARK: - Delivering

    /// The request at the head: one operation, or up to `maxEvents` consecutive events of one
    /// identity within `maxBytes` of bodies.
    ///
    /// One exception to the head: the identify that merges an anonymous identity goes before that
    /// identity's own queued work (never past anything else). Offline since first launch, the
    /// server then sees the sign-in first and links the anonymous id (API.md §6, "the device was
    /// offline the whole time"), and the anonymous events, sent next through the alias, land on
    /// the person after one `$subscriber.merged`, as Voidhash sends queued links before purchases.
    /// Order within each identity is unchanged.
    func nextBatch(maxEvents batchLimit: Int, maxBytes: Int) throws -> Batch? {
        skipDropped()
        guard head < pending.count else { return nil }
        let first = pending[head]
        guard let identity = epochs[first.epoch] else { return nil }
        if identity.externalId == nil, let identify = identifyAhead(of: first.epoch, anonymousId: identity.anonymousId),
            let stamp = epochs[identify.epoch]
        {
            return Batch(kind: .identify, epoch: identify.epoch, identity: stamp, records: [identify], ahead: true)
        }
        guard first.kind == .event else {
            return Batch(kind: first.kind, epoch: first.epoch, identity: identity, records: [first])
        }
        var records = [first]
        var bytes = first.bodyLength
        var index = head + 1
        while index < pending.count, records.count < batchLimit {
            let next = pending[index]
            if let frozenEnd, next.seq > frozenEnd { break }
            guard next.kind == .event, next.epoch == first.epoch else { break }
            if !isDropped(next) {
                guard bytes + next.bodyLength <= maxBytes else { break }
                records.append(next)
                bytes += next.bodyLength
            }
            index += 1
        }
        // One read for the whole batch: its events were appended one after another.
        let start = records[0].bodyOffset
        let span = try log.read(from: start, to: records.last!.bodyOffset + UInt64(records.last!.bodyLength))
        for index in records.indices {
            let from = Int(records[index].bodyOffset - start)
            records[index].body = Array(span[from..<from + records[index].bodyLength])
        }
        return Batch(kind: .event, epoch: first.epoch, identity: identity, records: records)
    }

    /// The identify right after the anonymous identity `epoch`'s run of operations, if it merges
    /// that identity's anonymous id.
    private func identifyAhead(of epoch: UInt32, anonymousId: String) -> Record? {
        var index = head + 1
        while index < pending.count, pending[index].epoch == epoch { index += 1 }
        guard index < pending.count else { return nil }
        let candidate = pending[index]
        guard candidate.kind == .identify, let stamp = epochs[candidate.epoch], stamp.externalId != nil,
            stamp.anonymousId == anonymousId
        else { return nil }
        return candidate
    }

    /// The identify sent ahead is done: recorded durably, then taken out of the middle of the queue.
    /// When it was accepted (`merged`), the anonymous id is now an alias of a person who may be
    /// verified, and the server wants that person's proof on every call through any of their ids
    /// ("once verified, always verified"): the anonymous identity's queued work borrows the proof.
    func completeAhead(_ identify: Batch, merged: Bool) throws {
        var records = [Record(kind: .done, seq: identify.firstSeq, epoch: 0, createdAt: 0, body: [])]
        var lent: [UInt32: IdentityStamp] = [:]
        if merged {
            for (epoch, stamp) in epochs
            where stamp.externalId == nil && stamp.anonymousId == identify.identity.anonymousId {
                var proven = stamp
                proven.identityHash = identify.identity.identityHash
                proven.identityToken = identify.identity.identityToken
                lent[epoch] = proven
                let body = (try? JSONEncoder().encode(proven)).map { [UInt8]($0) } ?? []
                // The same epoch number again: on load the later record wins.
                records.append(Record(kind: .epoch, seq: 0, epoch: epoch, createdAt: 0, body: body))
            }
        }
        try log.sync(through: log.append(records))
        epochs.merge(lent) { _, new in new }
        doneAhead.insert(identify.firstSeq)
        if let index = pending[head...].firstIndex(where: { $0.seq == identify.firstSeq }) {
            pending.remove(at: index)
            if eventScan > index { eventScan -= 1 }
        }
    }

    /// Keeps the head batch's range for its retries.
    func freeze(through seq: UInt64?) { frozenEnd = seq }

    private func skipDropped() {
        while head < pending.count, isDropped(pending[head]) { head += 1 }
    }

    /// Every operation through `seq` is done: recorded durably, then removed.
    func complete(through seq: UInt64) throws {
        try log.sync(through: log.append([Record(kind: .ack, seq: seq, epoch: 0, createdAt: 0, body: [])]))
        ackedThrough = max(ackedThrough, seq)
        frozenEnd = nil
        while head < pending.count, pending[head].seq <= seq {
            if pending[head].kind == .event && !isDropped(pending[head]) { queuedEvents -= 1 }
            head += 1
        }
        eventScan = max(eventScan, head)
        try compactIfWorthIt()
    }

    /// Rewrites the log once its acknowledged part dominates, so it does not grow forever.
    private func compactIfWorthIt() throws {
        let live = pending[head...].filter { !isDropped($0) }
        let worth = (live.isEmpty && log.size > 256 * 1024) || (log.size > 8 * 1024 * 1024 && head > pending.count / 2)
        guard worth else {
            if head > 4096 && head > pending.count / 2 { trimMemory() }
            return
        }
        // The epochs the remaining operations name (and the current one), then the operations.
        let needed = Set(live.map(\.epoch)).union([currentEpoch])
        var records: [Record] = needed.sorted().compactMap { epoch in
            epochs[epoch].map { identity in
                Record(
                    kind: .epoch, seq: 0, epoch: epoch, createdAt: 0,
                    body: (try? JSONEncoder().encode(identity)).map { [UInt8]($0) } ?? [])
            }
        }
        // The numbering must go on from where it was, also when nothing is left: the highest seq
        // ever given out was acknowledged, dropped, or is live, and these two records keep the first two.
        records.append(Record(kind: .ack, seq: ackedThrough, epoch: 0, createdAt: 0, body: []))
        records.append(Record(kind: .dropEvents, seq: droppedThrough, epoch: 0, createdAt: 0, body: []))
        // Events' bodies come back from the old file for the copy, and leave memory again after.
        let file = live.contains { $0.kind == .event } ? [UInt8](try Data(contentsOf: log.url)) : []
        let firstLive = records.count
        for record in live {
            var copy = record
            if record.kind == .event {
                let from = Int(record.bodyOffset)
                copy.body = Array(file[from..<from + record.bodyLength])
            }
            records.append(copy)
        }
        let offsets = try log.replace(with: records)
        pending = live.enumerated().map { index, record in
            var moved = record
            moved.bodyOffset = offsets[firstLive + index]
            return moved
        }
        head = 0
        eventScan = 0
    }

    private func trimMemory() {
        pending.removeFirst(head)
        eventScan = max(eventScan - head, 0)
        head = 0
    }
}

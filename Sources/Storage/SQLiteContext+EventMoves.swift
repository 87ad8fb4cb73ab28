import SQLite

// An absorb's events, moved after its commit (migration 0006, issue 14).
//
// Copying a 10,000-event anonymous subscriber inside the merge held the single writer for
// ~80 ms. Instead, the merge reserves the target's seqs `offset + 1 … offset + n` for the
// source's events `1 … n` and records the move; the store's purge job then moves them a chunk
// per write group, each chunk inserted at `offset + seq` on the target and deleted from the
// source in one transaction. Until the move is done:
// - the target's timeline reads the source's remaining events at their target seqs;
// - a new event for the target whose client id is among them is a duplicate;
// - a merge touching the target finishes the move first (rare: it keeps offsets simple).
// The offset only works when no source event is dropped as a duplicate of the target's, so a
// source sharing a client id with the target is copied at once, as before.

/// One absorbed subscriber whose events are moving to the person that absorbed it.
struct EventMove {
    var source: Int64
    var target: Int64
    /// The target's seq of a source event is `offset + seq`.
    var offset: Int64
}

extension SQLiteContext {
    /// Whether absorbed events are still moving into `key`: one probe of a small index.
    func hasIncomingMoves(_ key: Int64) throws -> Bool {
        try db.firstRow("SELECT 1 FROM event_moves WHERE target_key = ? LIMIT 1", [key], read: { _ in true }) ?? false
    }

    /// Whether an event with `clientID` is among those still moving into `key`: then a new one
    /// with that id is a duplicate.
    func isMovingIn(clientID: String, to key: Int64) throws -> Bool {
        try db.firstRow(
            """
            SELECT 1 FROM event_moves AS m JOIN events AS e ON e.subscriber_key = m.source_key AND e.client_id = ?2
            WHERE m.target_key = ?1 LIMIT 1
            """, [key, clientID], read: { _ in true }) ?? false
    }

    /// Records the move of every event of `from` to the end of `to`'s timeline (after
    /// `afterSeq`), when an offset can number them.
    /// - Returns: the number of events that will move, or nil when they must be copied now:
    ///   a source event shares its client id with the target's, or the source's seqs are not
    ///   `1 … n`.
    func scheduleEventMove(from: Int64, to: Int64, afterSeq: Int64) throws -> Int? {
        // Only an identified person receives moves, and the source is anonymous; finishing
        // any into either keeps both timelines' rows where their seqs say.
        try finishMoves(into: from, to)
        guard
            let (count, last) = try db.firstRow(
                "SELECT count(*), coalesce(max(seq), 0) FROM events WHERE subscriber_key = ?", [from],
                read: { (try $0.requiredInt(at: 0), try $0.requiredInt(at: 1)) })
        else { return nil }
        if count == 0 { return 0 }
        guard count == last, try !sharesClientID(from, to, sourceCount: count, targetCount: afterSeq) else {
            return nil
        }
        try db.execute(
            "INSERT INTO event_moves (source_key, target_key, seq_offset) VALUES (?, ?, ?)", [from, to, afterSeq])
        return Int(count)
    }

    /// Whether some event of `source` has a client id that `target` also has. It walks the
    /// smaller timeline and probes the other's client-id index.
    private func sharesClientID(_ source: Int64, _ target: Int64, sourceCount: Int64, targetCount: Int64) throws
        -> Bool
    {
        let (walked, probed) = targetCount < sourceCount ? (target, source) : (source, target)
        // CROSS JOIN keeps this order: SQLite does not reorder a CROSS JOIN's tables.
        return try db.firstRow(
            """
            SELECT 1 FROM events AS walked CROSS JOIN events AS probed
            WHERE walked.subscriber_key = ?1 AND probed.subscriber_key = ?2 AND probed.client_id = walked.client_id
            LIMIT 1
            """, [walked, probed], read: { _ in true }) ?? false
    }

    /// Some pending move, if any.
    func anyEventMove() throws -> EventMove? {
        try db.firstRow("SELECT source_key, target_key, seq_offset FROM event_moves LIMIT 1", read: Self.eventMove)
    }

    private static func eventMove(_ row: Statement) throws -> EventMove {
        EventMove(
            source: try row.requiredInt(at: 0), target: try row.requiredInt(at: 1), offset: try row.requiredInt(at: 2))
    }

    /// Moves the first `limit` remaining events of `move`'s source to the target; once the
    /// source has none left, the move is done and its row deleted.
    /// - Returns: the number of events moved.
    @discardableResult
    func moveEvents(_ move: EventMove, limit: Int) throws -> Int {
        // The chunk is the source's seqs up to `through`: inserting and deleting that range
        // touches the same rows by the primary key.
        let through =
            try db.firstRow(
                "SELECT seq FROM events WHERE subscriber_key = ? ORDER BY seq LIMIT 1 OFFSET ?",
                [move.source, limit - 1],
                read: { try $0.requiredInt(at: 0) }) ?? Int64.max
        // The client-id conflict cannot happen (the merge checked, new events are checked
        // against the source); DO NOTHING keeps a broken invariant from stalling every move.
        try db.execute(
            """
            INSERT INTO events (subscriber_key, seq, client_id, name, timestamp, received_at, properties)
            SELECT ?2, ?3 + seq, client_id, name, timestamp, received_at, properties FROM events
            WHERE subscriber_key = ?1 AND seq <= ?4 ORDER BY seq
            ON CONFLICT (subscriber_key, client_id) DO NOTHING
            """, [move.source, move.target, move.offset, through])
        try db.execute("DELETE FROM events WHERE subscriber_key = ? AND seq <= ?", [move.source, through])
        let moved = db.changes
        if moved < limit {
            try db.execute("DELETE FROM event_moves WHERE source_key = ?", [move.source])
        }
        return moved
    }

    /// Finishes, in this transaction, every move into either subscriber.
    func finishMoves(into first: Int64, _ second: Int64) throws {
        let moves = try db.rows(
            "SELECT source_key, target_key, seq_offset FROM event_moves WHERE target_key IN (?, ?)", [first, second],
            read: Self.eventMove)
        for move in moves {
            while try moveEvents(move, limit: Self.finishChunk) == Self.finishChunk {}
        }
    }

    /// Events per statement when a move is finished at once, where no request waits on the
    /// chunks (a merge into the person, `buzzkit copy`).
    static let finishChunk = 10_000
}

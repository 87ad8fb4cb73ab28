-- An absorb's events move after its commit, a chunk per write group (issue 14).
--
-- Before, the merge copied every event of the anonymous subscriber inside its own transaction:
-- a 10,000-event absorb held the single writer for ~80 ms, and every request in its group (and
-- queued behind it) waited. Now, when none of the source's client ids is already on the target,
-- the merge only reserves the target's seq range and records the move here; the source is
-- retired as before, and the store moves its events a chunk at a time in later groups, deleting
-- each moved row from the source. Until the row here is gone, the target's timeline reads the
-- source's remaining events as its own (target seq = seq_offset + source seq), and a new event
-- whose client id is among them is a duplicate. An absorb whose source shares a client id with
-- the target copies at once, as before (that numbering is not an offset).
CREATE TABLE event_moves (
    source_key  INTEGER PRIMARY KEY REFERENCES subscribers(key) ON DELETE CASCADE,
    -- Erasing the target drops the move; the retired source's events are then only purged.
    target_key  INTEGER NOT NULL REFERENCES subscribers(key) ON DELETE CASCADE,
    seq_offset  INTEGER NOT NULL
);
CREATE INDEX event_moves_by_target ON event_moves(target_key);

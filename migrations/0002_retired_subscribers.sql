-- Retiring an absorbed anonymous subscriber without deleting its events in the same transaction.
--
-- Deleting the source row by ON DELETE CASCADE removed its events inside the merge, so a
-- 10,000-event absorb (and every request committed in its group) waited for 10,000 deletes.
-- Now the merge only marks the row retired (its id is freed, its aliases already moved, its
-- other children deleted); its events are unreachable (nothing resolves to a retired key), and
-- the store deletes them in small chunks in later write groups, then the row itself. The row
-- stays until then so that its key, which the events still carry, cannot be reused.
ALTER TABLE subscribers ADD COLUMN retired INTEGER NOT NULL DEFAULT 0;
CREATE INDEX subscribers_retired ON subscribers(key) WHERE retired = 1;

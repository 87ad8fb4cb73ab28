-- The outbox in one row per event and endpoint (API.md §14; bench/README.md, "Webhook outbox").
--
-- Before: each event wrote a webhook_events row with its ~300-byte rendered body and a
-- webhook_deliveries row pointing at it, two tables and their pages dirtied in the request's
-- write group. Now the delivery row carries what the body is made of (the event's id, type,
-- creation time and its `data` as JSON; the tenant is the endpoint's) and the worker renders the
-- envelope at send time, the same bytes on every attempt. Attempts are still one row each: a
-- retry copies the event's columns into its new pending row (off the request path).
--
-- Existing rows keep the body they were rendered with (`body`), so a pending delivery from before
-- this migration is sent byte for byte as it was first attempted.
CREATE TABLE webhook_deliveries_new (
    key             INTEGER PRIMARY KEY,
    endpoint_key    INTEGER NOT NULL REFERENCES webhook_endpoints(key) ON DELETE CASCADE,
    event_id        TEXT NOT NULL,          -- evt_…, the webhook-id header
    type            TEXT NOT NULL,
    event_at        INTEGER NOT NULL,       -- the event's createdAt, Unix ms
    data            TEXT,                   -- the event's `data`, compact JSON
    body            TEXT,                   -- a body rendered before this migration
    attempt         INTEGER NOT NULL,
    -- Spelled with OR, not IN: SQLite checks an IN list by building a temporary b-tree for every
    -- row written (a zeroed page or two, and about half of each outbox insert's instructions).
    status          TEXT NOT NULL CHECK (status = 'pending' OR status = 'succeeded' OR status = 'failed'),
    response_status INTEGER,
    error           TEXT,
    created_at      INTEGER NOT NULL,
    next_attempt_at INTEGER,
    CHECK ((data IS NULL) <> (body IS NULL))
);
INSERT INTO webhook_deliveries_new (key, endpoint_key, event_id, type, event_at, data, body, attempt, status,
                                    response_status, error, created_at, next_attempt_at)
SELECT d.key, d.endpoint_key, d.event_id, e.type, e.created_at, NULL, e.body, d.attempt, d.status,
    d.response_status, d.error, d.created_at, d.next_attempt_at
FROM webhook_deliveries AS d JOIN webhook_events AS e ON e.id = d.event_id;
DROP TABLE webhook_deliveries;
DROP TABLE webhook_events;
ALTER TABLE webhook_deliveries_new RENAME TO webhook_deliveries;
CREATE INDEX webhook_deliveries_due ON webhook_deliveries(next_attempt_at, key) WHERE status = 'pending';
CREATE INDEX webhook_deliveries_by_endpoint ON webhook_deliveries(endpoint_key, key);

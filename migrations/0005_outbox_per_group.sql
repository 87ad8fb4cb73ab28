-- First attempts wait in one row per write group and endpoint (API.md §14; bench/README.md,
-- "One outbox row per write group and endpoint").
--
-- Before: every event was a webhook_deliveries row, written on the request path with its two
-- indexes and its foreign key, ~20k instructions each; identify-link wrote two. Now the events a
-- write group queued for one endpoint share one row here (at most 64), with one small index. An
-- event's first attempt becomes a webhook_deliveries row when the worker records it, under the
-- key the event was given here, so a pending delivery keeps its id. Retries are
-- webhook_deliveries rows as before.
CREATE TABLE webhook_outbox (
    key             INTEGER PRIMARY KEY,    -- the delivery key of its last event
    first_key       INTEGER NOT NULL,       -- its events have the delivery keys first_key … key, in order
    -- No foreign key: deleting or disabling an endpoint deals with its rows itself, and the
    -- check cost each insert a lookup.
    endpoint_key    INTEGER NOT NULL,
    events          TEXT NOT NULL,          -- one line per event: id TAB type TAB createdAt TAB data
    CHECK (first_key <= key)
);
-- An endpoint's deliveries page reads its waiting events newest first.
CREATE INDEX webhook_outbox_by_endpoint ON webhook_outbox(endpoint_key, key);

-- The outbox in one row per event and endpoint (API.md §14; bench/README.md, "Webhook outbox"),
-- as migrations/0004_outbox_one_row.sql does on SQLite: the delivery row carries the event's id,
-- type, creation time and `data`, and the worker renders the envelope at send time, the same
-- bytes on every attempt. Existing rows keep the body they were rendered with (`body`).
ALTER TABLE webhook_deliveries
    ADD COLUMN type text,
    ADD COLUMN event_at bigint,
    ADD COLUMN data text,
    ADD COLUMN body text;
UPDATE webhook_deliveries AS d SET type = e.type, event_at = e.created_at, body = e.body
FROM webhook_events AS e WHERE e.id = d.event_id;
ALTER TABLE webhook_deliveries
    DROP CONSTRAINT webhook_deliveries_event_id_fkey,
    ALTER COLUMN type SET NOT NULL,
    ALTER COLUMN event_at SET NOT NULL,
    ADD CONSTRAINT webhook_deliveries_one_payload CHECK ((data IS NULL) <> (body IS NULL));
DROP TABLE webhook_events;

-- Idempotency keys (API.md §13) and webhooks with their outbox (API.md §14).
--
-- Both are written inside the write transaction of the request they belong to: the
-- idempotency record beside the effect it answers for, an outbox row beside the change it
-- reports. A crash therefore keeps both or neither.

-- One answer per (scope, key); scope is the API key id and the tenant it acted in.
CREATE TABLE idempotency_records (
    scope           TEXT NOT NULL,
    key             TEXT NOT NULL,
    method          TEXT NOT NULL,
    path            TEXT NOT NULL,          -- the request target, query included
    body_sha256     BLOB NOT NULL,
    status          INTEGER NOT NULL,
    content_type    TEXT NOT NULL,
    response        BLOB NOT NULL,          -- the body exactly as first sent
    created_at      INTEGER NOT NULL,
    PRIMARY KEY (scope, key)
) WITHOUT ROWID;
-- The purge walks the oldest records a small batch at a time.
CREATE INDEX idempotency_by_age ON idempotency_records(created_at);

CREATE TABLE webhook_endpoints (
    key             INTEGER PRIMARY KEY,    -- creation order, for keyset pages
    id              TEXT NOT NULL UNIQUE,   -- whk_…
    tenant_id       TEXT NOT NULL REFERENCES tenants(id),
    url             TEXT NOT NULL,
    events          TEXT NOT NULL,          -- '*' or ',type,type,' (matched with instr)
    description     TEXT,
    secret          TEXT NOT NULL,          -- whsec_…; the worker signs with it
    enabled         INTEGER NOT NULL DEFAULT 1,
    created_at      INTEGER NOT NULL
);
-- "Does any enabled endpoint of this tenant want this type?" runs on every reported change.
CREATE INDEX webhook_endpoints_by_tenant ON webhook_endpoints(tenant_id, enabled);

-- An event as it is sent: the body is rendered once so every attempt carries the same bytes.
CREATE TABLE webhook_events (
    id              TEXT PRIMARY KEY,       -- evt_…, the webhook-id header
    tenant_id       TEXT NOT NULL,
    type            TEXT NOT NULL,
    body            TEXT NOT NULL,
    created_at      INTEGER NOT NULL
) WITHOUT ROWID;

-- Every attempt, one row each; the rows still 'pending' are the outbox the worker reads in
-- order. A failed attempt that will be retried is followed by a new pending row.
CREATE TABLE webhook_deliveries (
    key             INTEGER PRIMARY KEY,
    endpoint_key    INTEGER NOT NULL REFERENCES webhook_endpoints(key) ON DELETE CASCADE,
    event_id        TEXT NOT NULL REFERENCES webhook_events(id),
    attempt         INTEGER NOT NULL,
    status          TEXT NOT NULL CHECK (status IN ('pending', 'succeeded', 'failed')),
    response_status INTEGER,
    error           TEXT,
    created_at      INTEGER NOT NULL,
    next_attempt_at INTEGER
);
CREATE INDEX webhook_deliveries_due ON webhook_deliveries(next_attempt_at, key) WHERE status = 'pending';
CREATE INDEX webhook_deliveries_by_endpoint ON webhook_deliveries(endpoint_key, key);
-- No index on event_id: no query looks deliveries up by event, and webhook_events rows are
-- never deleted (the foreign key would need one then). Each index is one more page written per
-- commit; this one cost ~1.2 KB of writes per identify with a webhook (bench/README.md).

-- BuzzKit Server schema, version 1.
-- Times are milliseconds since the Unix epoch (UTC). Every row of a tenant's data is reached
-- from its tenant id or from a subscriber key that was resolved within the tenant.

CREATE TABLE workspaces (
    id          TEXT PRIMARY KEY,
    name        TEXT NOT NULL,
    created_at  INTEGER NOT NULL
) WITHOUT ROWID;

CREATE TABLE tenants (
    id                      TEXT PRIMARY KEY,
    workspace_id            TEXT NOT NULL REFERENCES workspaces(id),
    name                    TEXT NOT NULL,
    settings                TEXT NOT NULL,          -- JSON object, see TenantSettings
    identity_secret         TEXT NOT NULL,          -- the backend must be able to read it back (API.md §5)
    previous_secret         TEXT,                   -- verifies until previous_expires_at
    previous_expires_at     INTEGER,
    created_at              INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX tenants_by_workspace ON tenants(workspace_id);

-- Keys are stored only as the hex SHA-256 of the key.
CREATE TABLE api_keys (
    hash            TEXT PRIMARY KEY,
    id              TEXT NOT NULL UNIQUE,
    kind            TEXT NOT NULL CHECK (kind IN ('client', 'secret', 'workspace')),
    workspace_id    TEXT NOT NULL REFERENCES workspaces(id),
    tenant_id       TEXT REFERENCES tenants(id),
    display_prefix  TEXT NOT NULL,
    created_at      INTEGER NOT NULL,
    revoked_at      INTEGER,
    CHECK ((kind = 'workspace') = (tenant_id IS NULL))
) WITHOUT ROWID;
CREATE INDEX api_keys_by_scope ON api_keys(workspace_id, tenant_id);

-- `key` is internal and never changes; `id` is the public id a rename changes.
CREATE TABLE subscribers (
    key                 INTEGER PRIMARY KEY,
    tenant_id           TEXT NOT NULL REFERENCES tenants(id),
    id                  TEXT NOT NULL,
    anonymous           INTEGER NOT NULL,
    verified            INTEGER NOT NULL DEFAULT 0,
    email               TEXT,
    email_subscribed    INTEGER NOT NULL DEFAULT 0,
    last_seq            INTEGER NOT NULL DEFAULT 0,
    event_count         INTEGER NOT NULL DEFAULT 0,
    created_at          INTEGER NOT NULL,
    updated_at          INTEGER NOT NULL,
    UNIQUE (tenant_id, id)
);
-- Listing pages by key within a tenant, optionally filtered.
CREATE INDEX subscribers_by_tenant ON subscribers(tenant_id, key);
CREATE INDEX subscribers_identified ON subscribers(tenant_id, anonymous, verified);

-- Every id a subscriber ever had, its current one included; unique per tenant.
CREATE TABLE aliases (
    tenant_id       TEXT NOT NULL,
    alias           TEXT NOT NULL,
    subscriber_key  INTEGER NOT NULL REFERENCES subscribers(key) ON DELETE CASCADE,
    PRIMARY KEY (tenant_id, alias)
) WITHOUT ROWID;
CREATE INDEX aliases_by_subscriber ON aliases(subscriber_key);

CREATE TABLE attributes (
    subscriber_key  INTEGER NOT NULL REFERENCES subscribers(key) ON DELETE CASCADE,
    name            TEXT NOT NULL,
    value           TEXT NOT NULL,                  -- JSON
    set_by_backend  INTEGER NOT NULL,               -- provenance: the app may never remove these
    PRIMARY KEY (subscriber_key, name)
) WITHOUT ROWID;

-- A device id and a token each belong to one subscriber of a tenant at a time.
CREATE TABLE push_subscriptions (
    tenant_id       TEXT NOT NULL,
    device_id       TEXT NOT NULL,
    subscriber_key  INTEGER NOT NULL REFERENCES subscribers(key) ON DELETE CASCADE,
    token           TEXT NOT NULL,
    platform        TEXT NOT NULL,
    created_at      INTEGER NOT NULL,
    updated_at      INTEGER NOT NULL,
    PRIMARY KEY (tenant_id, device_id),
    UNIQUE (tenant_id, token)
) WITHOUT ROWID;
CREATE INDEX push_subscriptions_by_subscriber ON push_subscriptions(subscriber_key, updated_at);

CREATE TABLE preferences (
    subscriber_key  INTEGER NOT NULL REFERENCES subscribers(key) ON DELETE CASCADE,
    topic           TEXT NOT NULL,
    subscribed      INTEGER NOT NULL,
    updated_at      INTEGER NOT NULL,
    PRIMARY KEY (subscriber_key, topic)
) WITHOUT ROWID;

-- The context each device last reported; NULL means never reported.
CREATE TABLE devices (
    subscriber_key  INTEGER NOT NULL REFERENCES subscribers(key) ON DELETE CASCADE,
    device_id       TEXT NOT NULL,
    platform        TEXT,
    app_version     TEXT,
    os_version      TEXT,
    model           TEXT,
    locale          TEXT,
    time_zone       TEXT,
    last_seen_at    INTEGER NOT NULL,
    PRIMARY KEY (subscriber_key, device_id)
) WITHOUT ROWID;

-- A timeline: seq is per subscriber, the client id is unique per subscriber (idempotency).
CREATE TABLE events (
    subscriber_key  INTEGER NOT NULL REFERENCES subscribers(key) ON DELETE CASCADE,
    seq             INTEGER NOT NULL,
    client_id       TEXT NOT NULL,
    name            TEXT NOT NULL,
    timestamp       INTEGER NOT NULL,
    received_at     INTEGER NOT NULL,
    properties      TEXT,                           -- JSON object or NULL
    PRIMARY KEY (subscriber_key, seq)
) WITHOUT ROWID;
CREATE UNIQUE INDEX events_by_client_id ON events(subscriber_key, client_id);

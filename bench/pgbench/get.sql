-- Ceiling for GET /v1/subscribers/{id}: the statement the PostgreSQL store reads snapshots with
-- (Sources/PostgresStorage/PostgresContext+Snapshot.swift, askedSnapshotsSQL), asked for one
-- subscriber, so the row and its children come back as JSON arrays: what one GET costs when it is
-- sent alone. The store sends one such statement for every GET waiting whose snapshot it does not
-- hold current (a held one it checks by key first, currentHeldSQL). Outside an explicit
-- transaction as there; a random seeded person each time (auth is cached by the server, so not here).
-- Variables: tenant, people.
\set p random(0, :people - 1)
SELECT q.i, s.xmin, s.key, s.tenant_id, s.id, s.anonymous, s.verified, s.email,
    s.email_subscribed, s.last_seq, s.event_count, s.created_at, s.updated_at,
    (SELECT json_agg(json_build_array(name, value, set_by_backend) ORDER BY name)
        FROM attributes WHERE subscriber_key = s.key) AS attributes,
    (SELECT json_agg(alias ORDER BY alias) FROM aliases WHERE subscriber_key = s.key) AS aliases,
    (SELECT json_agg(json_build_array(device_id, token, platform, created_at, updated_at)
            ORDER BY updated_at DESC, device_id)
        FROM push_subscriptions WHERE subscriber_key = s.key) AS push_subscriptions,
    (SELECT json_agg(json_build_array(topic, subscribed, updated_at) ORDER BY topic)
        FROM preferences WHERE subscriber_key = s.key) AS preferences,
    (SELECT json_agg(json_build_array(device_id, platform, app_version, os_version, model, locale, time_zone,
            last_seen_at) ORDER BY last_seen_at DESC, device_id)
        FROM devices WHERE subscriber_key = s.key) AS devices
FROM unnest(ARRAY[:tenant]::text[], ARRAY['user_' || lpad(:p::text, 6, '0')]::text[])
    WITH ORDINALITY AS q(tenant_id, alias, i)
JOIN aliases AS a ON a.tenant_id = q.tenant_id AND a.alias = q.alias
JOIN subscribers AS s ON s.key = a.subscriber_key
WHERE NOT s.retired;

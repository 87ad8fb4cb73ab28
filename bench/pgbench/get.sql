-- Ceiling for GET /v1/subscribers/{id}: the one statement the PostgreSQL store reads it with
-- (Sources/PostgresStorage/PostgresContext+Snapshot.swift: the row and its children as JSON
-- arrays, one round trip), outside an explicit transaction as there; a random seeded person each
-- time (auth is cached by the server, so not here). Variables: tenant, people.
\set p random(0, :people - 1)
SELECT s.key, s.tenant_id, s.id, s.anonymous, s.verified, s.email, s.email_subscribed, s.last_seq,
    s.event_count, s.created_at, s.updated_at,
    (SELECT json_agg(json_build_array(name, value, set_by_backend) ORDER BY name)
        FROM attributes WHERE subscriber_key = s.key),
    (SELECT json_agg(alias ORDER BY alias) FROM aliases WHERE subscriber_key = s.key AND alias <> s.id),
    (SELECT json_agg(json_build_array(device_id, token, platform, created_at, updated_at)
            ORDER BY updated_at DESC, device_id)
        FROM push_subscriptions WHERE subscriber_key = s.key),
    (SELECT json_agg(json_build_array(topic, subscribed, updated_at) ORDER BY topic)
        FROM preferences WHERE subscriber_key = s.key),
    (SELECT json_agg(json_build_array(device_id, platform, app_version, os_version, model, locale, time_zone,
            last_seen_at) ORDER BY last_seen_at DESC, device_id)
        FROM devices WHERE subscriber_key = s.key)
FROM aliases AS a JOIN subscribers AS s ON s.key = a.subscriber_key
WHERE a.tenant_id = :tenant AND a.alias = 'user_' || lpad(:p::text, 6, '0') AND NOT s.retired;

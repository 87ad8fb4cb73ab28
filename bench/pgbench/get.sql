-- Ceiling for GET /v1/subscribers/{id}: what the PostgreSQL store reads for it, the alias → row
-- lookup and the five snapshot reads in one REPEATABLE READ READ ONLY transaction, a random
-- seeded person each time (auth is cached by the server, so not here). Variables: tenant, people.
\set p random(0, :people - 1)
BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY;
SELECT s.key, s.tenant_id, s.id, s.anonymous, s.verified, s.email, s.email_subscribed, s.last_seq,
    s.event_count, s.created_at, s.updated_at
    FROM aliases AS a JOIN subscribers AS s ON s.key = a.subscriber_key
    WHERE a.tenant_id = :tenant AND a.alias = 'user_' || lpad(:p::text, 6, '0') AND NOT s.retired \gset s_
SELECT name, value, set_by_backend FROM attributes WHERE subscriber_key = :s_key ORDER BY name;
SELECT alias FROM aliases WHERE subscriber_key = :s_key AND alias <> :s_id ORDER BY alias;
SELECT device_id, token, platform, created_at, updated_at FROM push_subscriptions
    WHERE subscriber_key = :s_key ORDER BY updated_at DESC, device_id;
SELECT topic, subscribed, updated_at FROM preferences WHERE subscriber_key = :s_key ORDER BY topic;
SELECT device_id, platform, app_version, os_version, model, locale, time_zone, last_seen_at FROM devices
    WHERE subscriber_key = :s_key ORDER BY last_seen_at DESC, device_id;
COMMIT;

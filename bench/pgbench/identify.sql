-- Ceiling for POST /v1/identify on the rename path: the statements Sources/PostgresStorage runs
-- for one rename (both alias lookups, the new alias, the merge event, the row update, the
-- snapshot read back), in a SERIALIZABLE transaction as its writer does, one per request
-- (the server may group several). pgbench retries serialization failures (--max-tries).
-- Variables (bound as parameters: run with -M prepared; a colon inside a literal would be read
-- as a variable, hence chr(58)): tenant, now (ms). A sequence hands each transaction its own seeded anonymous id.
SELECT nextval('bench_anon') AS n \gset
BEGIN ISOLATION LEVEL SERIALIZABLE;
SELECT s.key, s.tenant_id, s.id, s.anonymous, s.verified, s.email, s.email_subscribed, s.last_seq,
    s.event_count, s.created_at, s.updated_at
    FROM aliases AS a JOIN subscribers AS s ON s.key = a.subscriber_key
    WHERE a.tenant_id = :tenant AND a.alias = 'p-pgbench-' || :n::text AND NOT s.retired;
SELECT s.key, s.tenant_id, s.id, s.anonymous, s.verified, s.email, s.email_subscribed, s.last_seq,
    s.event_count, s.created_at, s.updated_at
    FROM aliases AS a JOIN subscribers AS s ON s.key = a.subscriber_key
    WHERE a.tenant_id = :tenant AND a.alias = 'anon_' || lpad(:n::text, 21, '0') AND NOT s.retired \gset s_
INSERT INTO aliases (tenant_id, alias, subscriber_key) VALUES (:tenant, 'p-pgbench-' || :n::text, :s_key);
INSERT INTO events (subscriber_key, seq, client_id, name, timestamp, received_at, properties)
    VALUES (:s_key, :s_last_seq + 1, '$subscriber.merged' || chr(58) || 'anon_' || :n::text, '$subscriber.merged', :now, :now,
            '{"from":"anon","shape":"rename","eventsMoved":0}')
    ON CONFLICT (subscriber_key, client_id) DO NOTHING;
UPDATE subscribers SET id = 'p-pgbench-' || :n::text, anonymous = false, verified = :s_verified, email = NULLIF(:s_email::text, ''),
    email_subscribed = :s_email_subscribed, last_seq = :s_last_seq + 1, event_count = :s_event_count + 1, updated_at = :now
    WHERE key = :s_key;
SELECT name, value, set_by_backend FROM attributes WHERE subscriber_key = :s_key ORDER BY name;
SELECT alias FROM aliases WHERE subscriber_key = :s_key AND alias <> 'p-pgbench-' || :n::text ORDER BY alias;
SELECT device_id, token, platform, created_at, updated_at FROM push_subscriptions
    WHERE subscriber_key = :s_key ORDER BY updated_at DESC, device_id;
SELECT topic, subscribed, updated_at FROM preferences WHERE subscriber_key = :s_key ORDER BY topic;
SELECT device_id, platform, app_version, os_version, model, locale, time_zone, last_seen_at FROM devices
    WHERE subscriber_key = :s_key ORDER BY last_seen_at DESC, device_id;
COMMIT;

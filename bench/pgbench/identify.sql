-- Ceiling for POST /v1/identify on the rename path: the statements Sources/PostgresStorage runs
-- for one rename, in its order (read from PostgreSQL's statement log of one identify, with
-- log_statement=all): both alias lookups, the subscriber row locked FOR UPDATE and its alias
-- checked again, the alias count (maxAliases), the new alias, the merge event, the webhook
-- probe, the row update, in a READ COMMITTED transaction as its writer does, one per request
-- (the server may group several); then the snapshot read that renders the answer, after COMMIT
-- (the statement of bench/pgbench/get.sql, asked for this one subscriber).
-- Variables (bound as parameters: run with -M prepared; a colon inside a literal would be read
-- as a variable, hence chr(58)): tenant, now (ms). A sequence hands each transaction its own seeded anonymous id.
SELECT nextval('bench_anon') AS n \gset
BEGIN ISOLATION LEVEL READ COMMITTED;
SELECT subscriber_key FROM aliases WHERE tenant_id = :tenant AND alias = 'p-pgbench-' || :n::text;
SELECT subscriber_key AS key FROM aliases WHERE tenant_id = :tenant AND alias = 'anon_' || lpad(:n::text, 21, '0') \gset a_
SELECT key, tenant_id, id, anonymous, verified, email, email_subscribed, last_seq, event_count, created_at, updated_at
    FROM subscribers WHERE key = :a_key AND NOT retired FOR UPDATE \gset s_
SELECT subscriber_key FROM aliases WHERE tenant_id = :tenant AND alias = 'anon_' || lpad(:n::text, 21, '0');
SELECT count(*) FROM aliases WHERE subscriber_key = :s_key;
INSERT INTO aliases (tenant_id, alias, subscriber_key) VALUES (:tenant, 'p-pgbench-' || :n::text, :s_key);
INSERT INTO events (subscriber_key, seq, client_id, name, timestamp, received_at, properties)
    VALUES (:s_key, :s_last_seq + 1, '$subscriber.merged' || chr(58) || 'anon_' || :n::text, '$subscriber.merged', :now, :now,
            '{"from":"anon","shape":"rename","eventsMoved":0}')
    ON CONFLICT (subscriber_key, client_id) DO NOTHING;
SELECT 1 FROM webhook_endpoints WHERE tenant_id = :tenant AND enabled
    AND (events = '*' OR strpos(events, ',' || '$subscriber.merged' || ',') > 0) LIMIT 1;
UPDATE subscribers SET id = 'p-pgbench-' || :n::text, anonymous = false, verified = :s_verified, email = NULLIF(:s_email::text, ''),
    email_subscribed = :s_email_subscribed, last_seq = :s_last_seq + 1, event_count = :s_event_count + 1, updated_at = :now
    WHERE key = :s_key;
COMMIT;
SELECT q.i, s.key::text || ':' || s.xmin::text, s.key, s.tenant_id, s.id, s.anonymous, s.verified, s.email,
    s.email_subscribed, s.last_seq, s.event_count, s.created_at, s.updated_at,
    (SELECT json_agg(json_build_array(name, value, set_by_backend) ORDER BY name)
        FROM attributes WHERE subscriber_key = s.key AND (s.key::text || ':' || s.xmin::text) IS DISTINCT FROM q.held),
    (SELECT json_agg(alias ORDER BY alias)
        FROM aliases WHERE subscriber_key = s.key AND (s.key::text || ':' || s.xmin::text) IS DISTINCT FROM q.held),
    (SELECT json_agg(json_build_array(device_id, token, platform, created_at, updated_at)
            ORDER BY updated_at DESC, device_id)
        FROM push_subscriptions
        WHERE subscriber_key = s.key AND (s.key::text || ':' || s.xmin::text) IS DISTINCT FROM q.held),
    (SELECT json_agg(json_build_array(topic, subscribed, updated_at) ORDER BY topic)
        FROM preferences WHERE subscriber_key = s.key AND (s.key::text || ':' || s.xmin::text) IS DISTINCT FROM q.held),
    (SELECT json_agg(json_build_array(device_id, platform, app_version, os_version, model, locale, time_zone,
            last_seen_at) ORDER BY last_seen_at DESC, device_id)
        FROM devices WHERE subscriber_key = s.key AND (s.key::text || ':' || s.xmin::text) IS DISTINCT FROM q.held)
FROM unnest(ARRAY[:tenant]::text[], ARRAY['p-pgbench-' || :n::text]::text[], ARRAY[NULL]::text[])
    WITH ORDINALITY AS q(tenant_id, alias, held, i)
JOIN aliases AS a ON a.tenant_id = q.tenant_id AND a.alias = q.alias
JOIN subscribers AS s ON s.key = a.subscriber_key
WHERE NOT s.retired;

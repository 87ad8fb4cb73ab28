-- Ceiling for POST /v1/events with 50 new events: the person's row locked (seq is per
-- subscriber), 50 rows in one INSERT with the next seqs, the counters updated; one transaction.
-- Variables: tenant, people, now (ms).
\set p random(0, :people - 1)
SELECT nextval('bench_batch') AS b \gset
BEGIN;
SELECT s.key, s.last_seq, s.event_count FROM aliases a JOIN subscribers s ON s.key = a.subscriber_key
    WHERE a.tenant_id = :'tenant' AND a.alias = 'user_' || lpad(:p::text, 6, '0') FOR UPDATE OF s \gset s_
INSERT INTO events (subscriber_key, seq, client_id, name, timestamp, received_at, properties)
    SELECT :s_key, :s_last_seq + g, 'pgb-' || :b || '-' || g, 'screen_view', :now, :now,
           '{"screen":"home","index":7}'
    FROM generate_series(1, 50) AS g
    ON CONFLICT DO NOTHING;
UPDATE subscribers SET last_seq = :s_last_seq + 50, event_count = :s_event_count + 50, updated_at = :now
    WHERE key = :s_key;
COMMIT;

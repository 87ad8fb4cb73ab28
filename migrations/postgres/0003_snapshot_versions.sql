-- A subscriber's row gets a new version whenever anything its snapshot shows changes.
--
-- A server caches snapshots and, before answering one, checks in a batched round trip that
-- the subscriber row's system column `xmin` is still what it was when the snapshot was read
-- (PostgresSnapshotCache). Every UPDATE of the row gives it a new `xmin`, so changes to the
-- row itself need nothing more. Changes to the tables a snapshot gathers from the row's
-- children (attributes, aliases, push subscriptions, preferences, devices) touch the row of
-- every subscriber they involve, before and after the change, once per statement. Events are
-- left out: a snapshot shows only their count and last seq, which live on the row.

-- Counts the touches; nothing reads it but people (the version compared is `xmin`).
ALTER TABLE subscribers ADD COLUMN children_changes bigint NOT NULL DEFAULT 0;

CREATE FUNCTION buzzkit_touch_subscribers() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        UPDATE subscribers SET children_changes = children_changes + 1
            WHERE key IN (SELECT subscriber_key FROM new_rows ORDER BY 1);
    ELSIF TG_OP = 'DELETE' THEN
        UPDATE subscribers SET children_changes = children_changes + 1
            WHERE key IN (SELECT subscriber_key FROM old_rows ORDER BY 1);
    ELSE
        UPDATE subscribers SET children_changes = children_changes + 1 WHERE key IN (
            SELECT subscriber_key FROM old_rows UNION SELECT subscriber_key FROM new_rows);
    END IF;
    RETURN NULL;
END
$$;

-- Three triggers per table: a statement-level trigger with transition tables serves one event.
DO $$
DECLARE
    child text;
BEGIN
    FOREACH child IN ARRAY ARRAY['attributes', 'aliases', 'push_subscriptions', 'preferences', 'devices'] LOOP
        EXECUTE format('CREATE TRIGGER %1$s_touch_insert AFTER INSERT ON %1$s REFERENCING NEW TABLE AS new_rows'
            ' FOR EACH STATEMENT EXECUTE FUNCTION buzzkit_touch_subscribers()', child);
        EXECUTE format('CREATE TRIGGER %1$s_touch_update AFTER UPDATE ON %1$s'
            ' REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows'
            ' FOR EACH STATEMENT EXECUTE FUNCTION buzzkit_touch_subscribers()', child);
        EXECUTE format('CREATE TRIGGER %1$s_touch_delete AFTER DELETE ON %1$s REFERENCING OLD TABLE AS old_rows'
            ' FOR EACH STATEMENT EXECUTE FUNCTION buzzkit_touch_subscribers()', child);
    END LOOP;
END
$$;

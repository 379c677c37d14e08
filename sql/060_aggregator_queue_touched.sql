-- 060_aggregator_queue_touched: the load cycle's rollup queue from what the loader derived itself.
--
-- 051's queue_rollups(app_ids, days) derives the touched local days, devices and clicks by scanning
-- the cycle's rows in pg_temp.load_staging (a GROUP BY of every event into a temporary work table,
-- a time-zone conversion per row) and then copies the work tables into the pending tables. Inside
-- the load transaction that cost 0.35-0.45 s per 50,000-event cycle. The loader already holds one
-- row per touched device (pg_temp.load_devices: first_seen = its earliest new event) and one per
-- touched (app, UTC day) (pg_temp.load_touched), so queue_rollups_touched() queues the same work
-- from those small tables, straight into 051's pending tables (or 022's when the reports
-- migrations are not applied). process_rollups() is unchanged and computes the same rollups.
--
-- Contract (the loader's temporary tables, filled by the cycle before the call, emptied at commit):
--   load_touched (app_id, day, first_at, last_at, last_event_at): per (app, UTC day) of the rows the
--     cycle inserted, the earliest and latest row time (all kinds) and the latest event time
--     (kinds event and retention; NULL when none). A UTC day spans less than 24 hours, so the local
--     days its rows fall on are exactly the local days of first_at and last_at.
--   load_devices (app_id, device_id, first_seen, ...): per device of the inserted events, the
--     earliest of them (051's min_time).
--   load_staging (kind, app_id, click_id, time, ...): the cycle's rows (its clicks are queued).
-- Returns the number of (app, UTC day) keys queued.
CREATE OR REPLACE FUNCTION queue_rollups_touched()
RETURNS bigint
LANGUAGE plpgsql AS $fn$
DECLARE
    keys bigint;
BEGIN
    SELECT count(*) INTO keys FROM pg_temp.load_touched;
    IF keys = 0 THEN
        RETURN 0;
    END IF;
    IF to_regclass('rollup_pending_keys') IS NULL THEN
        -- 022 only (no reports migrations): 020's UTC rollup.
        INSERT INTO aggregator_pending_utc_days (app_id, day)
        SELECT DISTINCT app_id, day FROM pg_temp.load_touched
        ON CONFLICT DO NOTHING;
        RETURN keys;
    END IF;

    INSERT INTO rollup_pending_utc_days (app_id, day)
    SELECT DISTINCT app_id, day FROM pg_temp.load_touched
    ON CONFLICT DO NOTHING;

    INSERT INTO rollup_pending_keys (app_id, day)
    SELECT DISTINCT t.app_id, (x.at AT TIME ZONE coalesce(a.time_zone, 'UTC'))::date
    FROM pg_temp.load_touched t
    LEFT JOIN apps a ON a.id = t.app_id
    CROSS JOIN LATERAL (VALUES (t.first_at), (t.last_at)) AS x(at)
    ON CONFLICT DO NOTHING;

    -- No NOT EXISTS probe before ON CONFLICT here (unlike the devices upsert): process_rollups
    -- deletes pending rows without the load lock, and only ON CONFLICT waits for such a delete to
    -- commit and then inserts; a probe could see the row being taken and skip a device whose new
    -- events that pass does not see. The WHERE only saves a new row version when nothing changes.
    INSERT INTO rollup_pending_devices AS p (app_id, device_id, min_time)
    SELECT d.app_id, d.device_id, d.first_seen FROM pg_temp.load_devices d
    ON CONFLICT (app_id, device_id) DO UPDATE SET min_time = LEAST(p.min_time, EXCLUDED.min_time)
    WHERE p.min_time IS NULL OR EXCLUDED.min_time < p.min_time;

    INSERT INTO rollup_pending_clicks (app_id, click_id, click_time)
    SELECT DISTINCT x.app_id, x.click_id, x.time FROM pg_temp.load_staging x
    WHERE x.kind = 'click' AND x.click_id IS NOT NULL
    ON CONFLICT DO NOTHING;

    -- The app's newest loaded event time (caps retention's "day N reached").
    INSERT INTO rollup_apps AS a (app_id, newest_event_at)
    SELECT t.app_id, max(t.last_event_at) FROM pg_temp.load_touched t
    WHERE t.last_event_at IS NOT NULL GROUP BY t.app_id
    ON CONFLICT (app_id) DO UPDATE SET newest_event_at = GREATEST(a.newest_event_at, EXCLUDED.newest_event_at)
    WHERE a.newest_event_at IS NULL OR a.newest_event_at < EXCLUDED.newest_event_at;
    RETURN keys;
END
$fn$;

-- 079_rollups_hold_unknown_zone: one app's unknown time zone no longer stops every app's rollups.
--
-- 078 kept the loads going when the server no longer knows an app's zone (a name that left the
-- system's tzdata, e.g. `US/Pacific` once tzdata-legacy is gone), but the rollup pass still took
-- every app's queued work in one transaction and failed on that app's `AT TIME ZONE`: no app's
-- reports moved on, `report daily` refused every app's day as "rollups pending", and the queues
-- grew until the zone came back. Found by the forty-first session's audit of the SQL;
-- LoadCycleTests.unknownTimeZoneHoldsOnlyItsApp.
--
-- Now the pass holds such an app's queued work back (its keys, devices and clicks are set aside
-- for the pass and put back in the same transaction) and applies everyone else's. The held work
-- stays queued (report_rollups_pending; `report daily` refuses the app, exit 78, and its reports
-- answer 409 unknown_time_zone), and the aggregator names the app and its zone when it is first
-- held (`rollups.held`; rollup_held_apps() below), until the zone is installed again or the app is
-- changed (`apps update --id APP --time-zone ZONE`); its days then roll up in the next pass.
-- A rebuild (`report rebuild`) still fails on the zone, naming it: it recomputes every app.

-- The apps whose time zone this server does not know (report_is_time_zone, 050).
CREATE FUNCTION rollup_unknown_zone_apps() RETURNS TABLE (app_id text, time_zone text)
LANGUAGE sql STABLE AS $fn$
    SELECT a.id, a.time_zone FROM apps a WHERE NOT report_is_time_zone(a.time_zone) ORDER BY a.id
$fn$;

-- The apps a pass holds back that have work queued: what the aggregator reports after a pass.
CREATE FUNCTION rollup_held_apps() RETURNS TABLE (app_id text, time_zone text, days bigint)
LANGUAGE sql STABLE AS $fn$
    SELECT z.app_id, z.time_zone, count(k.day) FROM rollup_unknown_zone_apps() z
    JOIN rollup_pending_keys k ON k.app_id = z.app_id
    GROUP BY z.app_id, z.time_zone ORDER BY z.app_id
$fn$;

-- 062's pass, as 075 renamed it, applies what is queued; the new function of the same name
-- (which 075's process_rollups() calls under the load lock) holds the unknown-zone apps back.
ALTER FUNCTION process_rollups_locked() RENAME TO process_rollups_apply;

CREATE FUNCTION process_rollups_locked()
RETURNS integer
LANGUAGE plpgsql AS $fn$
DECLARE
    held text[];
    processed integer;
BEGIN
    SELECT array_agg(z.app_id) INTO held FROM rollup_unknown_zone_apps() z;
    IF held IS NULL THEN
        RETURN process_rollups_apply();
    END IF;
    PERFORM rollup_lock();
    IF to_regclass('pg_temp.rollup_held_keys') IS NULL THEN
        CREATE TEMP TABLE rollup_held_keys (app_id text NOT NULL, day date NOT NULL) ON COMMIT DELETE ROWS;
        CREATE TEMP TABLE rollup_held_devices (app_id text NOT NULL, device_id text NOT NULL, min_time timestamptz)
            ON COMMIT DELETE ROWS;
        CREATE TEMP TABLE rollup_held_clicks (app_id text NOT NULL, click_id text NOT NULL,
            click_time timestamptz NOT NULL) ON COMMIT DELETE ROWS;
    END IF;

    -- The batches mix apps: folded into the pending tables first (as the pass itself folds them,
    -- the earliest time per device), so the held apps' rows can be taken out.
    WITH batches AS (DELETE FROM rollup_pending_device_batches RETURNING app_ids, device_ids, min_times)
    INSERT INTO rollup_pending_devices AS p (app_id, device_id, min_time)
    SELECT u.app_id, u.device_id, min(u.min_time)
    FROM batches b CROSS JOIN LATERAL unnest(b.app_ids, b.device_ids, b.min_times) AS u(app_id, device_id, min_time)
    GROUP BY u.app_id, u.device_id
    ON CONFLICT (app_id, device_id) DO UPDATE SET min_time = least(p.min_time, excluded.min_time);
    WITH batches AS (DELETE FROM rollup_pending_click_batches RETURNING app_ids, click_ids, click_times)
    INSERT INTO rollup_pending_clicks (app_id, click_id, click_time)
    SELECT DISTINCT u.app_id, u.click_id, u.click_time
    FROM batches b CROSS JOIN LATERAL unnest(b.app_ids, b.click_ids, b.click_times) AS u(app_id, click_id, click_time)
    ON CONFLICT DO NOTHING;

    WITH taken AS (DELETE FROM rollup_pending_keys k WHERE k.app_id = ANY (held) RETURNING k.app_id, k.day)
    INSERT INTO pg_temp.rollup_held_keys SELECT * FROM taken;
    WITH taken AS (DELETE FROM rollup_pending_devices d WHERE d.app_id = ANY (held)
                   RETURNING d.app_id, d.device_id, d.min_time)
    INSERT INTO pg_temp.rollup_held_devices SELECT * FROM taken;
    WITH taken AS (DELETE FROM rollup_pending_clicks c WHERE c.app_id = ANY (held)
                   RETURNING c.app_id, c.click_id, c.click_time)
    INSERT INTO pg_temp.rollup_held_clicks SELECT * FROM taken;

    processed := process_rollups_apply();

    -- Back in the queue (nothing else can have queued the same rows meanwhile: loads wait for the
    -- load lock this pass holds, and the conflict clauses are for safety alone).
    INSERT INTO rollup_pending_keys (app_id, day) SELECT app_id, day FROM pg_temp.rollup_held_keys
    ON CONFLICT DO NOTHING;
    INSERT INTO rollup_pending_devices AS p (app_id, device_id, min_time)
    SELECT app_id, device_id, min_time FROM pg_temp.rollup_held_devices
    ON CONFLICT (app_id, device_id) DO UPDATE SET min_time = least(p.min_time, excluded.min_time);
    INSERT INTO rollup_pending_clicks (app_id, click_id, click_time)
    SELECT app_id, click_id, click_time FROM pg_temp.rollup_held_clicks
    ON CONFLICT DO NOTHING;
    DELETE FROM pg_temp.rollup_held_keys;
    DELETE FROM pg_temp.rollup_held_devices;
    DELETE FROM pg_temp.rollup_held_clicks;
    RETURN processed;
END
$fn$;
ALTER FUNCTION process_rollups_locked() SET TimeZone = 'UTC';

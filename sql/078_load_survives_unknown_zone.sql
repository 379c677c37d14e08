-- 078_load_survives_unknown_zone: one app's unknown time zone no longer stops every app's loads.
--
-- A load cycle queues the app-local days it touched inside its own transaction
-- (queue_rollups_touched, 061), with `AT TIME ZONE apps.time_zone`. apps_time_zone_known (050)
-- refuses a name PostgreSQL does not know when an app is created or changed, but a name it knew
-- then can go: Debian trixie and Ubuntu 23.10 moved the legacy aliases (`US/Pacific`, ...) to an
-- optional tzdata-legacy package, and PostgreSQL reads the system's zone files. Then every load
-- cycle failed with "time zone ... not recognized" (a class 22 error: the safe-cast retry failed
-- the same way), for every app, since a cycle loads them all in one transaction: nothing was
-- loaded, the lag grew without bound and the event log kept every segment. Found by reading the
-- SQL (forty-first session); LoadCycleTests.unknownTimeZoneDoesNotStopLoads.
--
-- Now the load takes such an app's days in UTC for its queue. The loads go on for every app; the
-- rollup pass still fails on that app's zone ("rollups.failed" in the aggregator's log, naming
-- it, aggregator_rollup_failures_total), which does not hold the loads back, until the zone is
-- installed again or the app changed (`apps update --id APP --time-zone ZONE`); the queued days then roll up.

-- The local date of `p_at` in `p_time_zone`, or its UTC date when the server does not know the zone.
CREATE FUNCTION rollup_local_day(p_at timestamptz, p_time_zone text) RETURNS date
LANGUAGE sql STABLE AS $fn$
    SELECT (p_at AT TIME ZONE CASE WHEN report_is_time_zone(coalesce(p_time_zone, 'UTC'))
                                   THEN coalesce(p_time_zone, 'UTC') ELSE 'UTC' END)::date
$fn$;

-- 061's function with the app-local day taken by rollup_local_day.
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
    SELECT DISTINCT t.app_id, rollup_local_day(x.at, a.time_zone)
    FROM pg_temp.load_touched t
    LEFT JOIN apps a ON a.id = t.app_id
    CROSS JOIN LATERAL (VALUES (t.first_at), (t.last_at)) AS x(at)
    ON CONFLICT DO NOTHING;

    -- One row for every device of the cycle (folded into rollup_pending_devices by the next pass).
    INSERT INTO rollup_pending_device_batches (app_ids, device_ids, min_times)
    SELECT array_agg(d.app_id), array_agg(d.device_id), array_agg(d.first_seen) FROM pg_temp.load_devices d
    HAVING count(*) > 0;

    INSERT INTO rollup_pending_click_batches (app_ids, click_ids, click_times)
    SELECT array_agg(x.app_id), array_agg(x.click_id), array_agg(x.time) FROM pg_temp.load_staging x
    WHERE x.kind = 'click' AND x.click_id IS NOT NULL
    HAVING count(*) > 0;

    -- The app's newest loaded event time (caps retention's "day N reached").
    INSERT INTO rollup_apps AS a (app_id, newest_event_at)
    SELECT t.app_id, max(t.last_event_at) FROM pg_temp.load_touched t
    WHERE t.last_event_at IS NOT NULL GROUP BY t.app_id
    ON CONFLICT (app_id) DO UPDATE SET newest_event_at = GREATEST(a.newest_event_at, EXCLUDED.newest_event_at)
    WHERE a.newest_event_at IS NULL OR a.newest_event_at < EXCLUDED.newest_event_at;
    RETURN keys;
END
$fn$;

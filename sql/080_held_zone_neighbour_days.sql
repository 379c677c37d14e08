-- 080_held_zone_neighbour_days: the held days of an app whose zone is unknown cover its local days.
--
-- While the server does not know an app's zone, a load queues that app's days by their UTC date
-- (078), and the pass holds them (079) until the zone is known again; then each queued day is
-- recomputed as a local day. But an event's local day can be the UTC day before or after (up to
-- 14 hours either way): an event at 03:00Z on 06-02 is 20:00 on 06-01 in US/Pacific, and 06-01
-- was never queued. Once the zone was back (installed again, or `apps update --no-rebuild`), that
-- local day kept what it had before the hold: returning devices' events, revenue, re-engagements,
-- matched installs and retention returns of those hours were missing until a rebuild, and the
-- daily report called the day complete. Found by the forty-third session's audit of the reports;
-- LoadCycleTests.unknownTimeZoneHoldsOnlyItsApp (released into zones either side of UTC).
--
-- Now such a load queues the UTC day and the days either side of it. Recomputing a local day that
-- holds none of the events costs a pass a little and changes nothing.

-- 078's function, with the three neighbouring days queued for an app whose zone is unknown.
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
    SELECT DISTINCT t.app_id, d.day
    FROM pg_temp.load_touched t
    LEFT JOIN apps a ON a.id = t.app_id
    CROSS JOIN LATERAL (SELECT report_is_time_zone(coalesce(a.time_zone, 'UTC')) AS known) z
    CROSS JOIN LATERAL (VALUES (t.first_at), (t.last_at)) AS x(at)
    CROSS JOIN LATERAL (
        SELECT rollup_local_day(x.at, a.time_zone) AS day WHERE z.known
        UNION ALL
        SELECT (x.at AT TIME ZONE 'UTC')::date + o FROM generate_series(-1, 1) AS o WHERE NOT z.known
    ) d
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

-- 051_report_refresh: incremental maintenance of the report rollups (docs/reports.md, "How the
-- rollups stay correct"). Replaces the aggregator's refresh_rollups / rebuild_rollups (020) with
-- the same signatures; rollup_events_daily (020) is still maintained exactly as 020 did.
--
-- Two ways to drive it:
--   * refresh_rollups(app_ids, days) inside the load transaction: rollups current at commit;
--   * queue_rollups(app_ids, days) inside the load transaction (cheap: records what was touched in
--     rollup_pending_*), and process_rollups() in a transaction of its own on a timer: loads stay
--     fast however big a day is, reports lag by the timer. Both give the same rollups.
--
-- refresh_rollups(app_ids, days) runs inside the loader's transaction. The unit of work is the
-- (app, local day) key: every rollup row of a key is deleted and recomputed from the raw tables of
-- that day (partition-pruned) and from the derived per-device and per-click tables. The key set
-- is derived from what the cycle touched:
--   * touched rows: the aggregator's staging table pg_temp.load_staging when it exists in the
--     session (kind, app_id, device_id, click_id, time of every row of the cycle), otherwise every
--     raw row of the given UTC days (correct, but costs whole days);
--   * touched devices are re-derived (install, attribution); a device whose derived state changed
--     refreshes its old and new install day, its install click's day (funnel cohort) and every day
--     it has events on (attribution moved, so its events moved between links);
--   * a touched device whose state did not change refreshes only its new events' days plus the
--     funnel cohorts those events can still reach (entered within the conversion window);
--   * touched clicks (a click may arrive after its match or after the actions that carry it):
--     their own day, the day of their match, the days of the actions opened through them, and
--     the devices whose install click they are.

-- Per-transaction scratch tables (temporary, emptied at commit).
CREATE OR REPLACE FUNCTION rollup_prepare_work() RETURNS void
LANGUAGE plpgsql AS $fn$
BEGIN
    IF to_regclass('pg_temp.rollup_work_keys') IS NULL THEN
        CREATE TEMP TABLE rollup_work_keys (app_id text NOT NULL, day date NOT NULL, PRIMARY KEY (app_id, day))
            ON COMMIT DELETE ROWS;
        CREATE TEMP TABLE rollup_work_devices (
            app_id text NOT NULL, device_id text NOT NULL, min_time timestamptz, changed boolean NOT NULL DEFAULT false,
            stable boolean NOT NULL DEFAULT false, is_new boolean NOT NULL DEFAULT false,
            PRIMARY KEY (app_id, device_id)) ON COMMIT DELETE ROWS;
        CREATE TEMP TABLE rollup_work_clicks (
            app_id text NOT NULL, click_id text NOT NULL, click_time timestamptz NOT NULL,
            PRIMARY KEY (app_id, click_id, click_time)) ON COMMIT DELETE ROWS;
        CREATE TEMP TABLE rollup_work_states (LIKE rollup_devices, PRIMARY KEY (app_id, device_id)) ON COMMIT DELETE ROWS;
        CREATE TEMP TABLE rollup_work_entries (LIKE rollup_funnel_entries, PRIMARY KEY (app_id, funnel_id, device_id))
            ON COMMIT DELETE ROWS;
    ELSE
        TRUNCATE pg_temp.rollup_work_keys, pg_temp.rollup_work_devices, pg_temp.rollup_work_clicks,
            pg_temp.rollup_work_states, pg_temp.rollup_work_entries;
    END IF;
END
$fn$;

-- The steps a device reached in a funnel: element k is the time of step k. Step 1 is given
-- (p_start); each later step is the earliest matching event at or after the previous step and at
-- or before p_deadline ('install' is the device's install time under the same rule).
CREATE OR REPLACE FUNCTION report_funnel_times(p_app text, p_device text, p_install_at timestamptz,
    p_start timestamptz, p_steps text[], p_deadline timestamptz)
RETURNS timestamptz[]
LANGUAGE plpgsql STABLE AS $fn$
DECLARE
    times timestamptz[] := ARRAY[p_start];
    previous timestamptz := p_start;
    next_time timestamptz;
BEGIN
    IF p_device IS NULL THEN
        RETURN times;
    END IF;
    FOR i IN 2 .. cardinality(p_steps) LOOP
        IF p_steps[i] = 'install' THEN
            next_time := CASE WHEN p_install_at >= previous AND p_install_at <= p_deadline THEN p_install_at END;
        ELSE
            SELECT min(e.event_time) INTO next_time FROM events e
            WHERE e.app_id = p_app AND e.device_id = p_device AND e.name = p_steps[i]
              AND e.event_time >= previous AND e.event_time <= p_deadline;
        END IF;
        EXIT WHEN next_time IS NULL;
        times := times || next_time;
        previous := next_time;
    END LOOP;
    RETURN times;
END
$fn$;

-- Loads rollup_clicks for pg_temp.rollup_work_clicks (each probe pruned to the click's partition).
CREATE OR REPLACE FUNCTION rollup_load_clicks() RETURNS void
LANGUAGE plpgsql AS $fn$
BEGIN
    INSERT INTO rollup_clicks AS r (app_id, click_id, click_time, click_day, path, platform, click_kind,
                                    utm_source, utm_medium, utm_campaign)
    SELECT DISTINCT ON (w.app_id, w.click_id) w.app_id, w.click_id, c.click_time,
           (c.click_time AT TIME ZONE s.time_zone)::date, c.path, coalesce(c.platform, ''), c.click_kind,
           coalesce(c.utm_source, ''), coalesce(c.utm_medium, ''), coalesce(c.utm_campaign, '')
    FROM pg_temp.rollup_work_clicks w
    CROSS JOIN LATERAL rollup_settings(w.app_id) s
    CROSS JOIN LATERAL (
        SELECT c.* FROM clicks c
        WHERE c.app_id = w.app_id AND c.click_id = w.click_id AND c.click_time = w.click_time LIMIT 1) c
    ORDER BY w.app_id, w.click_id, c.click_time
    ON CONFLICT (app_id, click_id) DO UPDATE SET
        click_time = EXCLUDED.click_time, click_day = EXCLUDED.click_day, path = EXCLUDED.path,
        platform = EXCLUDED.platform, click_kind = EXCLUDED.click_kind, utm_source = EXCLUDED.utm_source,
        utm_medium = EXCLUDED.utm_medium, utm_campaign = EXCLUDED.utm_campaign
    WHERE EXCLUDED.click_time <= r.click_time;
END
$fn$;

-- Derives the state of every device in pg_temp.rollup_work_devices into pg_temp.rollup_work_states
-- (rollup_devices' columns), and their funnel entries into pg_temp.rollup_work_entries.
--
-- The common case is cheap: a known device whose new events (all at or after min_time) are not
-- older than its install, add no first attribution object and no earlier install click is
-- "stable": its old state is copied, and only its new events are looked at (index range scans
-- pruned to the partitions at or after min_time). A new device's events are all at or after
-- min_time. Only known devices that may have changed are re-derived from all their events.
CREATE OR REPLACE FUNCTION rollup_compute_states() RETURNS void
LANGUAGE plpgsql AS $fn$
DECLARE
    oldest_new timestamptz;
BEGIN
    UPDATE pg_temp.rollup_work_devices w SET is_new = true
    WHERE NOT EXISTS (SELECT 1 FROM rollup_devices o WHERE o.app_id = w.app_id AND o.device_id = w.device_id);
    UPDATE pg_temp.rollup_work_devices w SET stable = true
    FROM rollup_devices o
    WHERE o.app_id = w.app_id AND o.device_id = w.device_id AND w.min_time IS NOT NULL AND w.min_time >= o.install_at
      -- its install click did not just arrive
      AND NOT EXISTS (
          SELECT 1 FROM pg_temp.rollup_work_clicks k WHERE k.app_id = o.app_id AND k.click_id = o.install_click_id)
      AND NOT EXISTS (
          SELECT 1 FROM events e
          WHERE e.app_id = w.app_id AND e.device_id = w.device_id AND e.event_time >= w.min_time
            AND ((NOT o.has_attribution
                  AND (e.open_type IS NOT NULL OR e.install_click_id IS NOT NULL OR e.open_click_id IS NOT NULL))
                 OR (e.install_click_id IS NOT NULL
                     AND (o.install_click_id IS NULL OR e.event_time < o.install_click_event_at))));
    ANALYZE pg_temp.rollup_work_devices;
    SELECT min(min_time) INTO oldest_new FROM pg_temp.rollup_work_devices WHERE is_new;

    INSERT INTO pg_temp.rollup_work_states
    SELECT o.* FROM pg_temp.rollup_work_devices w
    JOIN rollup_devices o ON o.app_id = w.app_id AND o.device_id = w.device_id
    WHERE w.stable;

    INSERT INTO pg_temp.rollup_work_states (app_id, device_id, install_at, install_day, platform, has_attribution,
        install_click_id, install_click_at, install_click_day, install_click_event_at, link_path, utm_source,
        utm_medium, utm_campaign)
    WITH ev AS MATERIALIZED (
        SELECT e.app_id, e.device_id, e.event_time, e.event_id, e.platform, e.install_click_id,
               (e.open_type IS NOT NULL OR e.install_click_id IS NOT NULL OR e.open_click_id IS NOT NULL) AS attributed
        FROM events e JOIN pg_temp.rollup_work_devices w ON w.app_id = e.app_id AND w.device_id = e.device_id
        WHERE w.is_new AND e.event_time >= oldest_new
        UNION ALL
        SELECT e.app_id, e.device_id, e.event_time, e.event_id, e.platform, e.install_click_id,
               (e.open_type IS NOT NULL OR e.install_click_id IS NOT NULL OR e.open_click_id IS NOT NULL)
        FROM events e JOIN pg_temp.rollup_work_devices w ON w.app_id = e.app_id AND w.device_id = e.device_id
        WHERE NOT w.is_new AND NOT w.stable
    ), first_event AS (
        SELECT DISTINCT ON (app_id, device_id) app_id, device_id, event_time, platform
        FROM ev ORDER BY app_id, device_id, event_time, event_id
    ), install_click AS (
        SELECT DISTINCT ON (app_id, device_id) app_id, device_id, install_click_id, event_time
        FROM ev WHERE install_click_id IS NOT NULL ORDER BY app_id, device_id, event_time, event_id
    ), flags AS (
        SELECT app_id, device_id, bool_or(attributed) AS has_attribution FROM ev GROUP BY app_id, device_id
    )
    SELECT f.app_id, f.device_id, f.event_time, (f.event_time AT TIME ZONE s.time_zone)::date, coalesce(f.platform, ''),
           g.has_attribution, i.install_click_id, c.click_time, c.click_day, i.event_time,
           CASE WHEN v.ok THEN c.path END, CASE WHEN v.ok THEN c.utm_source END,
           CASE WHEN v.ok THEN c.utm_medium END, CASE WHEN v.ok THEN c.utm_campaign END
    FROM first_event f
    JOIN flags g ON g.app_id = f.app_id AND g.device_id = f.device_id
    CROSS JOIN LATERAL rollup_settings(f.app_id) s
    LEFT JOIN install_click i ON i.app_id = f.app_id AND i.device_id = f.device_id
    LEFT JOIN rollup_clicks c ON c.app_id = i.app_id AND c.click_id = i.install_click_id
    CROSS JOIN LATERAL (
        SELECT (c.click_time <= f.event_time AND f.event_time - c.click_time <= s.install_lookback) AS ok) v;
    ANALYZE pg_temp.rollup_work_states;

    -- Funnel entries: a stable device keeps an entry its new events cannot precede.
    INSERT INTO pg_temp.rollup_work_entries
    SELECT o.* FROM pg_temp.rollup_work_devices w
    JOIN rollup_funnel_entries o ON o.app_id = w.app_id AND o.device_id = w.device_id
    WHERE w.stable AND w.min_time >= o.entered_at;
    -- Entries into app funnels that start with an event (or 'install'), for the rest.
    INSERT INTO pg_temp.rollup_work_entries (app_id, funnel_id, device_id, entered_at, entered_day)
    SELECT x.app_id, x.funnel_id, x.device_id, x.entered_at, (x.entered_at AT TIME ZONE s.time_zone)::date
    FROM (
        SELECT st.app_id, f.funnel_id, st.device_id, st.install_at AS entered_at
        FROM funnels f JOIN pg_temp.rollup_work_states st ON st.app_id = f.app_id
        WHERE f.steps[1] = 'install'
        UNION ALL
        SELECT e.app_id, f.funnel_id, e.device_id, min(e.event_time)
        FROM funnels f
        JOIN pg_temp.rollup_work_devices w ON w.app_id = f.app_id
        JOIN events e ON e.app_id = w.app_id AND e.device_id = w.device_id AND e.name = f.steps[1]
        WHERE f.steps[1] NOT IN ('install', 'click')
        GROUP BY e.app_id, f.funnel_id, e.device_id
    ) x
    CROSS JOIN LATERAL rollup_settings(x.app_id) s
    WHERE NOT EXISTS (
        SELECT 1 FROM pg_temp.rollup_work_entries k
        WHERE k.app_id = x.app_id AND k.funnel_id = x.funnel_id AND k.device_id = x.device_id);
END
$fn$;

-- Applies the work: derives the affected keys from the touched devices and clicks, replaces the
-- derived device and funnel-entry rows, then recomputes every affected (app, day).
CREATE OR REPLACE FUNCTION rollup_apply_work() RETURNS void
LANGUAGE plpgsql AS $fn$
DECLARE
    k record;
BEGIN
    PERFORM rollup_load_clicks();

    -- Keys of touched clicks: their day, their match's day, the days of actions opened through them.
    INSERT INTO pg_temp.rollup_work_keys (app_id, day)
    SELECT DISTINCT x.app_id, (x.at AT TIME ZONE s.time_zone)::date
    FROM (
        SELECT w.app_id, w.click_time AS at FROM pg_temp.rollup_work_clicks w
        UNION ALL
        SELECT m.app_id, m.match_time FROM pg_temp.rollup_work_clicks w
        JOIN match_ids m ON m.app_id = w.app_id AND m.click_id = w.click_id
        UNION ALL
        SELECT e.app_id, e.event_time FROM pg_temp.rollup_work_clicks w
        JOIN events e ON e.app_id = w.app_id AND e.open_click_id = w.click_id
        WHERE e.open_click_id IS NOT NULL
    ) x
    CROSS JOIN LATERAL rollup_settings(x.app_id) s
    ON CONFLICT DO NOTHING;

    -- Devices whose install click is among the touched clicks are re-derived too.
    INSERT INTO pg_temp.rollup_work_devices (app_id, device_id, min_time)
    SELECT DISTINCT d.app_id, d.device_id, NULL::timestamptz
    FROM pg_temp.rollup_work_clicks w
    JOIN rollup_devices d ON d.app_id = w.app_id AND d.install_click_id = w.click_id
    ON CONFLICT DO NOTHING;

    PERFORM rollup_compute_states();

    UPDATE pg_temp.rollup_work_devices w SET changed = true
    WHERE NOT w.stable AND NOT EXISTS (
        SELECT 1 FROM rollup_devices o JOIN pg_temp.rollup_work_states n ON n.app_id = o.app_id AND n.device_id = o.device_id
        WHERE o.app_id = w.app_id AND o.device_id = w.device_id
          AND (o.install_at, o.install_day, o.platform, o.has_attribution, o.install_click_id, o.install_click_at,
               o.install_click_day, o.install_click_event_at, o.link_path, o.utm_source, o.utm_medium, o.utm_campaign)
              IS NOT DISTINCT FROM
              (n.install_at, n.install_day, n.platform, n.has_attribution, n.install_click_id, n.install_click_at,
               n.install_click_day, n.install_click_event_at, n.link_path, n.utm_source, n.utm_medium, n.utm_campaign));

    INSERT INTO pg_temp.rollup_work_keys (app_id, day)
    SELECT DISTINCT x.app_id, x.day FROM (
        -- a changed device: old and new install day and install-click day
        SELECT o.app_id, unnest(ARRAY[o.install_day, o.install_click_day]) AS day
        FROM pg_temp.rollup_work_devices w JOIN rollup_devices o ON o.app_id = w.app_id AND o.device_id = w.device_id
        WHERE w.changed
        UNION ALL
        SELECT n.app_id, unnest(ARRAY[n.install_day, n.install_click_day])
        FROM pg_temp.rollup_work_devices w JOIN pg_temp.rollup_work_states n ON n.app_id = w.app_id AND n.device_id = w.device_id
        WHERE w.changed
        UNION ALL
        -- ... and every day it has events on
        SELECT e.app_id, (e.event_time AT TIME ZONE s.time_zone)::date
        FROM pg_temp.rollup_work_devices w
        CROSS JOIN LATERAL rollup_settings(w.app_id) s
        JOIN events e ON e.app_id = w.app_id AND e.device_id = w.device_id
        WHERE w.changed
        UNION ALL
        -- an unchanged device with new events: the click funnel cohort they can still reach
        SELECT n.app_id, n.install_click_day
        FROM pg_temp.rollup_work_devices w JOIN pg_temp.rollup_work_states n ON n.app_id = w.app_id AND n.device_id = w.device_id
        CROSS JOIN LATERAL rollup_settings(w.app_id) s
        WHERE NOT w.changed AND w.min_time IS NOT NULL AND n.install_click_at + s.conversion_window >= w.min_time
        UNION ALL
        -- funnel entries: old and new entry day when the entry moved, the device changed, or the new
        -- events fall within the entry's conversion window
        SELECT o.app_id, o.entered_day
        FROM pg_temp.rollup_work_devices w
        JOIN rollup_funnel_entries o ON o.app_id = w.app_id AND o.device_id = w.device_id
        CROSS JOIN LATERAL rollup_settings(w.app_id) s
        LEFT JOIN pg_temp.rollup_work_entries n
            ON n.app_id = o.app_id AND n.funnel_id = o.funnel_id AND n.device_id = o.device_id
        WHERE w.changed OR n.entered_at IS DISTINCT FROM o.entered_at
           OR (w.min_time IS NOT NULL AND o.entered_at + s.conversion_window >= w.min_time)
        UNION ALL
        SELECT n.app_id, n.entered_day
        FROM pg_temp.rollup_work_devices w
        JOIN pg_temp.rollup_work_entries n ON n.app_id = w.app_id AND n.device_id = w.device_id
        CROSS JOIN LATERAL rollup_settings(w.app_id) s
        LEFT JOIN rollup_funnel_entries o
            ON o.app_id = n.app_id AND o.funnel_id = n.funnel_id AND o.device_id = n.device_id
        WHERE w.changed OR n.entered_at IS DISTINCT FROM o.entered_at
           OR (w.min_time IS NOT NULL AND n.entered_at + s.conversion_window >= w.min_time)
    ) x
    WHERE x.day IS NOT NULL
    ON CONFLICT DO NOTHING;

    DELETE FROM rollup_devices d USING pg_temp.rollup_work_devices w
    WHERE d.app_id = w.app_id AND d.device_id = w.device_id;
    INSERT INTO rollup_devices SELECT * FROM pg_temp.rollup_work_states;
    DELETE FROM rollup_funnel_entries f USING pg_temp.rollup_work_devices w
    WHERE f.app_id = w.app_id AND f.device_id = w.device_id;
    INSERT INTO rollup_funnel_entries SELECT * FROM pg_temp.rollup_work_entries;

    FOR k IN SELECT app_id, day FROM pg_temp.rollup_work_keys ORDER BY app_id, day LOOP
        PERFORM rollup_refresh_day(k.app_id, k.day);
    END LOOP;
END
$fn$;

-- The aggregator's first rollup (020), per UTC day, unchanged.
CREATE OR REPLACE FUNCTION rollup_refresh_events_daily(p_app_ids text[], p_days date[]) RETURNS void
LANGUAGE plpgsql AS $fn$
DECLARE
    k record;
    lower_bound timestamptz;
BEGIN
    IF to_regclass('rollup_events_daily') IS NULL THEN
        RETURN;
    END IF;
    FOR k IN
        SELECT DISTINCT u.app_id, u.day FROM unnest(p_app_ids, p_days) AS u(app_id, day)
        WHERE u.app_id IS NOT NULL AND u.day IS NOT NULL ORDER BY 1, 2
    LOOP
        lower_bound := k.day::timestamp AT TIME ZONE 'UTC';
        EXECUTE 'DELETE FROM rollup_events_daily r WHERE r.app_id = $1 AND r.day = $2' USING k.app_id, k.day;
        EXECUTE 'INSERT INTO rollup_events_daily (app_id, day, kind, name, events, devices)
                 SELECT $1, $2, e.kind, e.name, count(*), count(DISTINCT e.device_id) FROM events e
                 WHERE e.app_id = $1 AND e.event_time >= $3 AND e.event_time < $3 + interval ''1 day''
                 GROUP BY e.kind, e.name'
            USING k.app_id, k.day, lower_bound;
    END LOOP;
END
$fn$;

-- Work waiting for process_rollups (queue_rollups fills them; both are cheap to append to).
CREATE TABLE rollup_pending_keys (app_id text NOT NULL, day date NOT NULL, PRIMARY KEY (app_id, day));
CREATE TABLE rollup_pending_devices (
    app_id text NOT NULL, device_id text NOT NULL, min_time timestamptz, PRIMARY KEY (app_id, device_id));
CREATE TABLE rollup_pending_clicks (
    app_id text NOT NULL, click_id text NOT NULL, click_time timestamptz NOT NULL,
    PRIMARY KEY (app_id, click_id, click_time));
-- UTC days whose rollup_events_daily (020) rows are due.
CREATE TABLE rollup_pending_utc_days (app_id text NOT NULL, day date NOT NULL, PRIMARY KEY (app_id, day));

-- Serialises everything that rewrites rollups in this schema (process, refresh, rebuild).
CREATE OR REPLACE FUNCTION rollup_lock() RETURNS void
LANGUAGE sql AS $fn$
    SELECT pg_advisory_xact_lock(1684370546, hashtext('rollups:' || current_schema()))
$fn$;

-- Records what a load cycle touched (same arguments and staging rules as refresh_rollups) without
-- recomputing anything: the cheap half, for a loader that runs process_rollups on its own timer.
CREATE OR REPLACE FUNCTION queue_rollups(p_app_ids text[], p_days date[])
RETURNS void
LANGUAGE plpgsql AS $fn$
DECLARE
    k record;
    lower_bound timestamptz;
    upper_bound timestamptz;
BEGIN
    IF p_app_ids IS NULL OR p_days IS NULL THEN
        RETURN;
    END IF;
    PERFORM rollup_prepare_work();
    -- 020's UTC rollup_events_daily is refreshed by process_rollups for these keys.
    INSERT INTO rollup_pending_utc_days (app_id, day)
    SELECT DISTINCT u.app_id, u.day FROM unnest(p_app_ids, p_days) AS u(app_id, day)
    WHERE u.app_id IS NOT NULL AND u.day IS NOT NULL
    ON CONFLICT DO NOTHING;

    IF to_regclass('pg_temp.load_staging') IS NOT NULL THEN
        -- Exactly the rows of this cycle (a superset of those inserted: duplicates included).
        INSERT INTO pg_temp.rollup_work_keys (app_id, day)
        SELECT DISTINCT x.app_id, (x.time AT TIME ZONE coalesce(a.time_zone, 'UTC'))::date
        FROM pg_temp.load_staging x LEFT JOIN apps a ON a.id = x.app_id
        WHERE x.app_id = ANY (p_app_ids)
        ON CONFLICT DO NOTHING;
        INSERT INTO pg_temp.rollup_work_devices (app_id, device_id, min_time)
        SELECT x.app_id, x.device_id, min(x.time) FROM pg_temp.load_staging x
        WHERE x.kind IN ('event', 'retention') AND x.device_id IS NOT NULL AND x.app_id = ANY (p_app_ids)
        GROUP BY x.app_id, x.device_id;
        INSERT INTO pg_temp.rollup_work_clicks (app_id, click_id, click_time)
        SELECT DISTINCT x.app_id, x.click_id, x.time FROM pg_temp.load_staging x
        WHERE x.kind = 'click' AND x.click_id IS NOT NULL AND x.app_id = ANY (p_app_ids);
    ELSE
        -- Without the staging table: every row of the given UTC days counts as touched.
        FOR k IN
            SELECT DISTINCT u.app_id, u.day, s.time_zone
            FROM unnest(p_app_ids, p_days) AS u(app_id, day) CROSS JOIN LATERAL rollup_settings(u.app_id) s
            WHERE u.app_id IS NOT NULL AND u.day IS NOT NULL
        LOOP
            lower_bound := k.day::timestamp AT TIME ZONE 'UTC';
            upper_bound := lower_bound + interval '1 day';
            INSERT INTO pg_temp.rollup_work_keys (app_id, day)
            SELECT k.app_id, g::date
            FROM generate_series((lower_bound AT TIME ZONE k.time_zone)::date::timestamp,
                                 ((upper_bound - interval '1 microsecond') AT TIME ZONE k.time_zone)::date::timestamp,
                                 interval '1 day') g
            ON CONFLICT DO NOTHING;
            INSERT INTO pg_temp.rollup_work_devices AS w (app_id, device_id, min_time)
            SELECT e.app_id, e.device_id, min(e.event_time) FROM events e
            WHERE e.app_id = k.app_id AND e.event_time >= lower_bound AND e.event_time < upper_bound
            GROUP BY e.app_id, e.device_id
            ON CONFLICT (app_id, device_id) DO UPDATE SET min_time = LEAST(w.min_time, EXCLUDED.min_time);
            INSERT INTO pg_temp.rollup_work_clicks (app_id, click_id, click_time)
            SELECT c.app_id, c.click_id, c.click_time FROM clicks c
            WHERE c.app_id = k.app_id AND c.click_time >= lower_bound AND c.click_time < upper_bound
            ON CONFLICT DO NOTHING;
        END LOOP;
    END IF;

    -- The app's newest loaded event time (caps retention's "day N reached").
    IF to_regclass('pg_temp.load_staging') IS NOT NULL THEN
        INSERT INTO rollup_apps AS a (app_id, newest_event_at)
        SELECT x.app_id, max(x.time) FROM pg_temp.load_staging x
        WHERE x.kind IN ('event', 'retention') AND x.app_id = ANY (p_app_ids) GROUP BY x.app_id
        ON CONFLICT (app_id) DO UPDATE SET newest_event_at = GREATEST(a.newest_event_at, EXCLUDED.newest_event_at);
    ELSE
        INSERT INTO rollup_apps AS a (app_id, newest_event_at)
        SELECT t.app_id, max(e.event_time)
        FROM (SELECT DISTINCT u.app_id, u.day FROM unnest(p_app_ids, p_days) AS u(app_id, day)) t
        CROSS JOIN LATERAL (
            SELECT max(x.event_time) AS event_time FROM events x
            WHERE x.app_id = t.app_id AND x.event_time >= t.day::timestamp AT TIME ZONE 'UTC'
              AND x.event_time < (t.day + 1)::timestamp AT TIME ZONE 'UTC') e
        WHERE e.event_time IS NOT NULL
        GROUP BY t.app_id
        ON CONFLICT (app_id) DO UPDATE SET newest_event_at = GREATEST(a.newest_event_at, EXCLUDED.newest_event_at);
    END IF;

    INSERT INTO rollup_pending_keys (app_id, day) SELECT app_id, day FROM pg_temp.rollup_work_keys
    ON CONFLICT DO NOTHING;
    INSERT INTO rollup_pending_devices AS p (app_id, device_id, min_time)
    SELECT app_id, device_id, min_time FROM pg_temp.rollup_work_devices
    ON CONFLICT (app_id, device_id) DO UPDATE SET min_time = LEAST(p.min_time, EXCLUDED.min_time);
    INSERT INTO rollup_pending_clicks (app_id, click_id, click_time)
    SELECT app_id, click_id, click_time FROM pg_temp.rollup_work_clicks
    ON CONFLICT DO NOTHING;
END
$fn$;

-- Applies all queued work: re-derives the queued devices and clicks, then recomputes every affected
-- (app, day). Returns the number of (app, day) keys recomputed. Serialised with rollup_lock().
CREATE OR REPLACE FUNCTION process_rollups()
RETURNS integer
LANGUAGE plpgsql AS $fn$
DECLARE
    processed integer;
    utc_apps text[];
    utc_days date[];
BEGIN
    PERFORM rollup_lock();
    PERFORM rollup_prepare_work();
    WITH taken AS (DELETE FROM rollup_pending_utc_days RETURNING app_id, day)
    SELECT array_agg(app_id), array_agg(day) INTO utc_apps, utc_days FROM taken;
    IF utc_apps IS NOT NULL THEN
        PERFORM rollup_refresh_events_daily(utc_apps, utc_days);
    END IF;
    WITH taken AS (DELETE FROM rollup_pending_keys RETURNING app_id, day)
    INSERT INTO pg_temp.rollup_work_keys (app_id, day) SELECT DISTINCT app_id, day FROM taken;
    WITH taken AS (DELETE FROM rollup_pending_devices RETURNING app_id, device_id, min_time)
    INSERT INTO pg_temp.rollup_work_devices (app_id, device_id, min_time)
    SELECT app_id, device_id, min(min_time) FROM taken GROUP BY app_id, device_id;
    WITH taken AS (DELETE FROM rollup_pending_clicks RETURNING app_id, click_id, click_time)
    INSERT INTO pg_temp.rollup_work_clicks (app_id, click_id, click_time)
    SELECT DISTINCT app_id, click_id, click_time FROM taken;
    PERFORM rollup_apply_work();
    SELECT count(*) INTO processed FROM pg_temp.rollup_work_keys;
    RETURN processed;
END
$fn$;

-- The seam the aggregator calls inside its load transaction (see the header): queue, then process
-- at once, so the rollups are current when the load commits.
CREATE OR REPLACE FUNCTION refresh_rollups(p_app_ids text[], p_days date[])
RETURNS void
LANGUAGE plpgsql AS $fn$
BEGIN
    IF p_app_ids IS NULL OR p_days IS NULL THEN
        RETURN;
    END IF;
    PERFORM rollup_lock();
    PERFORM queue_rollups(p_app_ids, p_days);
    PERFORM process_rollups();
END
$fn$;

-- Recomputes every rollup from the raw tables in one transaction (readers keep seeing the old rows
-- until it commits). Needed after changing an app's settings or its funnels; must agree with the
-- incremental result at all times (a test checks it).
CREATE OR REPLACE FUNCTION rebuild_rollups()
RETURNS void
LANGUAGE plpgsql AS $fn$
DECLARE
    k record;
BEGIN
    PERFORM rollup_lock();
    IF to_regclass('rollup_events_daily') IS NOT NULL THEN
        EXECUTE 'DELETE FROM rollup_events_daily';
        EXECUTE 'INSERT INTO rollup_events_daily (app_id, day, kind, name, events, devices)
                 SELECT e.app_id, (e.event_time AT TIME ZONE ''UTC'')::date, e.kind, e.name, count(*), count(DISTINCT e.device_id)
                 FROM events e GROUP BY 1, 2, 3, 4';
    END IF;
    PERFORM rollup_prepare_work();
    DELETE FROM rollup_link_daily;
    DELETE FROM rollup_link_utm_daily;
    DELETE FROM rollup_link_events_daily;
    DELETE FROM rollup_link_revenue_daily;
    DELETE FROM rollup_cohort_events_daily;
    DELETE FROM rollup_cohort_revenue_daily;
    DELETE FROM rollup_installs_daily;
    DELETE FROM rollup_retention_daily;
    DELETE FROM rollup_funnel_daily;
    DELETE FROM rollup_funnel_entries;
    DELETE FROM rollup_devices;
    DELETE FROM rollup_clicks;
    DELETE FROM rollup_pending_keys;
    DELETE FROM rollup_pending_devices;
    DELETE FROM rollup_pending_clicks;
    DELETE FROM rollup_pending_utc_days;
    DELETE FROM rollup_apps;
    INSERT INTO rollup_apps (app_id, newest_event_at) SELECT e.app_id, max(e.event_time) FROM events e GROUP BY e.app_id;

    INSERT INTO pg_temp.rollup_work_clicks (app_id, click_id, click_time)
    SELECT DISTINCT ON (c.app_id, c.click_id) c.app_id, c.click_id, c.click_time FROM clicks c
    ORDER BY c.app_id, c.click_id, c.click_time;
    PERFORM rollup_load_clicks();
    INSERT INTO pg_temp.rollup_work_devices (app_id, device_id, min_time, changed)
    SELECT e.app_id, e.device_id, min(e.event_time), true FROM events e GROUP BY e.app_id, e.device_id;
    PERFORM rollup_compute_states();
    INSERT INTO rollup_devices SELECT * FROM pg_temp.rollup_work_states;
    INSERT INTO rollup_funnel_entries SELECT * FROM pg_temp.rollup_work_entries;

    FOR k IN
        SELECT DISTINCT x.app_id, (x.at AT TIME ZONE coalesce(a.time_zone, 'UTC'))::date AS day
        FROM (
            SELECT e.app_id, e.event_time AS at FROM events e
            UNION ALL SELECT c.app_id, c.click_time FROM clicks c
            UNION ALL SELECT m.app_id, m.match_time FROM matches m
        ) x LEFT JOIN apps a ON a.id = x.app_id
        ORDER BY 1, 2
    LOOP
        PERFORM rollup_refresh_day(k.app_id, k.day);
    END LOOP;
END
$fn$;

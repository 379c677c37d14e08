-- 062_rollup_pass_cost: the same rollups from a cheaper process_rollups() pass.
--
-- Profiled (auto_explain with log_nested_statements and log_analyze, pg_stat_statements with
-- track = all) on `aggregate --once` over 100,000 `bench segments` events of one day (19,864 new
-- devices): the pass took 3.2-3.4 s, and rollup_refresh_day was not where it went. Per statement:
--   * rollup_apply_work's key INSERT, 0.9-1.2 s: "every day a changed device has events on" joined
--     every event of the 19,864 new devices (all new devices are "changed") through a nested loop of
--     index probes into every partition (the work table's statistics predate the `changed` flag:
--     estimated 1 row), called rollup_settings() once per event (100,000 calls, 5 us each: a SQL
--     function in FROM that returns one record is not inlined) and sorted 119,864 rows on disk;
--   * rollup_compute_states' state INSERT, 0.7-0.8 s: three sorts spilled to disk (work_mem 4MB)
--     and rollup_settings() once per device;
--   * rollup_refresh_events_daily (020's UTC rollup), 0.25-0.6 s: count(DISTINCT device_id) sorts
--     the day's rows on disk;
--   * the day's link-events statement of rollup_refresh_day, 0.4 s in the fresh database (24 ms
--     once analysed): rollup_devices had no statistics after the pass filled it, so the day's
--     events probed it one by one;
--   * moving the devices batch -> rollup_pending_devices -> rollup_work_devices (0.3 s), and two
--     UPDATEs of every work device (is_new, changed; 0.15-0.23 s each);
--   * the funnel-entry statement joined all events to the devices before finding that the app has no
--     event-first funnel (0.15 s).
--
-- What changes (same results; the incremental-vs-rebuild tests are unchanged):
--   * process_rollups() moves the queued devices (batches and rollup_pending_devices) straight into
--     rollup_work_devices, with is_new and changed set there (a new device has no old state, so it
--     is changed by definition, exactly what rollup_apply_work's NOT EXISTS computed), and raises
--     work_mem to at least 64MB for the pass (restored at its end);
--   * rollup_compute_states() and rollup_apply_work() look the apps' settings up once per app (a
--     hash join), skip the flags already set, analyse the work devices before the key INSERT, read
--     a new device's events only from the oldest new device's first event on (as the state INSERT
--     already did: every event of a device that was never derived was queued by the load that
--     inserted it), skip the event-first funnel entries when no such funnel exists, and analyse
--     rollup_devices / rollup_funnel_entries when the pass inserted many rows relative to their
--     statistics;
--   * rollup_refresh_events_daily() counts distinct devices by grouping (kind, name, device) first
--     (a hash aggregate instead of a sort of the whole day).
--
-- Contract for later migrations: process_rollups() folds the batch tables itself (061's contract);
-- rollup_fold_device_batches() and process_rollups_queued() stay defined for compatibility and are
-- no longer called by process_rollups().

-- The 020 UTC rollup of the given keys: per (app, UTC day), events and distinct devices per kind
-- and name. count(DISTINCT) sorted the whole day; grouping by device first is a hash aggregate.
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
        -- device_id is NOT NULL, so the groups per (kind, name) are exactly its distinct devices.
        EXECUTE 'INSERT INTO rollup_events_daily (app_id, day, kind, name, events, devices)
                 SELECT $1, $2, g.kind, g.name, sum(g.events)::bigint, count(*) FROM (
                     SELECT e.kind, e.name, e.device_id, count(*) AS events FROM events e
                     WHERE e.app_id = $1 AND e.event_time >= $3 AND e.event_time < $3 + interval ''1 day''
                     GROUP BY e.kind, e.name, e.device_id) g
                 GROUP BY g.kind, g.name'
            USING k.app_id, k.day, lower_bound;
    END LOOP;
END
$fn$;

-- 051's rollup_compute_states with the same results: flags already set by the caller are not
-- updated again, the settings are looked up once per app, the per-device sorts compare app and
-- device ids bytewise (COLLATE "C": the same groups, since equality of a deterministic collation is
-- byte equality; ties between events still go to the smaller event id in the database collation),
-- and the event-first funnel entries are only computed when such a funnel exists for the apps of
-- the work. With p_event_days, the local days of the events it reads are kept per device in
-- pg_temp.rollup_work_event_days (rollup_apply_work's "every day a changed device has events on",
-- without reading the events a second time); rebuild_rollups calls it without (every device, every
-- day: it recomputes every day anyway).
CREATE OR REPLACE FUNCTION rollup_compute_states(p_event_days boolean) RETURNS void
LANGUAGE plpgsql AS $fn$
DECLARE
    oldest_new timestamptz;
BEGIN
    IF to_regclass('pg_temp.rollup_work_event_days') IS NULL THEN
        CREATE TEMP TABLE rollup_work_event_days (app_id text NOT NULL, device_id text NOT NULL, day date NOT NULL)
            ON COMMIT DELETE ROWS;
    ELSE
        DELETE FROM pg_temp.rollup_work_event_days;
    END IF;
    UPDATE pg_temp.rollup_work_devices w SET is_new = true
    WHERE NOT w.is_new
      AND NOT EXISTS (SELECT 1 FROM rollup_devices o WHERE o.app_id = w.app_id AND o.device_id = w.device_id);
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
        SELECT DISTINCT ON (app_id COLLATE "C", device_id COLLATE "C") app_id, device_id, event_time, platform
        FROM ev ORDER BY app_id COLLATE "C", device_id COLLATE "C", event_time, event_id
    ), install_click AS (
        SELECT DISTINCT ON (app_id COLLATE "C", device_id COLLATE "C") app_id, device_id, install_click_id, event_time
        FROM ev WHERE install_click_id IS NOT NULL
        ORDER BY app_id COLLATE "C", device_id COLLATE "C", event_time, event_id
    ), flags AS (
        SELECT app_id, device_id, bool_or(attributed) AS has_attribution FROM ev GROUP BY app_id, device_id
    ), settings AS MATERIALIZED (
        SELECT a.app_id, s.* FROM (SELECT DISTINCT w.app_id FROM pg_temp.rollup_work_devices w) a
        CROSS JOIN LATERAL rollup_settings(a.app_id) s
    ), event_days AS (
        INSERT INTO pg_temp.rollup_work_event_days (app_id, device_id, day)
        SELECT DISTINCT ev.app_id, ev.device_id, (ev.event_time AT TIME ZONE s.time_zone)::date
        FROM ev JOIN settings s ON s.app_id = ev.app_id
        WHERE p_event_days
    )
    INSERT INTO pg_temp.rollup_work_states (app_id, device_id, install_at, install_day, platform, has_attribution,
        install_click_id, install_click_at, install_click_day, install_click_event_at, link_path, utm_source,
        utm_medium, utm_campaign)
    SELECT f.app_id, f.device_id, f.event_time, (f.event_time AT TIME ZONE s.time_zone)::date, coalesce(f.platform, ''),
           g.has_attribution, i.install_click_id, c.click_time, c.click_day, i.event_time,
           CASE WHEN v.ok THEN c.path END, CASE WHEN v.ok THEN c.utm_source END,
           CASE WHEN v.ok THEN c.utm_medium END, CASE WHEN v.ok THEN c.utm_campaign END
    FROM first_event f
    JOIN flags g ON g.app_id = f.app_id AND g.device_id = f.device_id
    JOIN settings s ON s.app_id = f.app_id
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
    -- Entries into app funnels that start with an event (or 'install'), for the rest; nothing to do
    -- when the work's apps have no funnel (every branch below joins funnels).
    IF NOT EXISTS (
        SELECT 1 FROM funnels f WHERE f.app_id IN (SELECT DISTINCT w.app_id FROM pg_temp.rollup_work_devices w)) THEN
        RETURN;
    END IF;
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

-- The 051 signature (rebuild_rollups calls it): no event days.
CREATE OR REPLACE FUNCTION rollup_compute_states() RETURNS void
LANGUAGE plpgsql AS $fn$
BEGIN
    PERFORM rollup_compute_states(false);
END
$fn$;

-- ANALYZEs a derived table when a pass inserted many rows relative to its statistics (or it has
-- none yet), so the per-day statements that join it plan for its real size.
CREATE OR REPLACE FUNCTION rollup_analyze_if_grown(p_table regclass, p_inserted bigint) RETURNS void
LANGUAGE plpgsql AS $fn$
DECLARE
    estimated real;
BEGIN
    SELECT c.reltuples INTO estimated FROM pg_class c WHERE c.oid = p_table;
    IF p_inserted >= 1000 AND (estimated IS NULL OR estimated < 0 OR p_inserted > 0.2 * estimated) THEN
        EXECUTE format('ANALYZE %s', p_table);
    END IF;
END
$fn$;

-- ANALYZEs the day partitions of events, clicks and matches of the given UTC days that have no
-- statistics yet (created since autovacuum last looked: it analyses a table only after 50 changes
-- and within a minute). The pass's statements join those partitions: without statistics the
-- planner expected 2 rows where the day held 100,000 (nested loops probing once per row, sorts
-- instead of hash aggregates: the pass took 2-3x as long). A full ANALYZE of a 100,000-row
-- partition costs 0.4-0.5 s here (30,000 sampled rows, jsonb columns); with
-- default_statistics_target 10 (3,000 rows) 20-40 ms, enough for these plans. Autovacuum replaces
-- them with full statistics once the partition has changed by a tenth.
CREATE OR REPLACE FUNCTION rollup_analyze_new_partitions(p_days date[]) RETURNS void
LANGUAGE plpgsql AS $fn$
DECLARE
    t record;
    saved_target text := current_setting('default_statistics_target');
BEGIN
    FOR t IN
        SELECT DISTINCT to_regclass(p.parent || '_p' || to_char(d.day, 'YYYYMMDD')) AS part
        FROM unnest(p_days) AS d(day) CROSS JOIN (VALUES ('events'), ('clicks'), ('matches')) AS p(parent)
        WHERE d.day IS NOT NULL
    LOOP
        CONTINUE WHEN t.part IS NULL;
        IF EXISTS (SELECT 1 FROM pg_class c WHERE c.oid = t.part AND c.reltuples < 0) THEN
            PERFORM set_config('default_statistics_target', '10', true);
            EXECUTE format('ANALYZE %s', t.part);
            PERFORM set_config('default_statistics_target', saved_target, true);
        END IF;
    END LOOP;
END
$fn$;

-- 051's rollup_apply_work with the same results (see the header for what is cheaper).
CREATE OR REPLACE FUNCTION rollup_apply_work() RETURNS void
LANGUAGE plpgsql AS $fn$
DECLARE
    k record;
    inserted bigint;
BEGIN
    PERFORM rollup_load_clicks();

    -- Keys of touched clicks: their day, their match's day, the days of actions opened through them.
    INSERT INTO pg_temp.rollup_work_keys (app_id, day)
    WITH settings AS MATERIALIZED (
        SELECT a.app_id, s.* FROM (SELECT DISTINCT w.app_id FROM pg_temp.rollup_work_clicks w) a
        CROSS JOIN LATERAL rollup_settings(a.app_id) s
    )
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
    JOIN settings s ON s.app_id = x.app_id
    ON CONFLICT DO NOTHING;

    -- Devices whose install click is among the touched clicks are re-derived too.
    INSERT INTO pg_temp.rollup_work_devices (app_id, device_id, min_time)
    SELECT DISTINCT d.app_id, d.device_id, NULL::timestamptz
    FROM pg_temp.rollup_work_clicks w
    JOIN rollup_devices d ON d.app_id = w.app_id AND d.install_click_id = w.click_id
    ON CONFLICT DO NOTHING;

    PERFORM rollup_compute_states(true);

    -- A device whose state differs from its stored one (a new device has none: process_rollups
    -- marks it changed already).
    UPDATE pg_temp.rollup_work_devices w SET changed = true
    WHERE NOT w.stable AND NOT w.changed AND NOT EXISTS (
        SELECT 1 FROM rollup_devices o JOIN pg_temp.rollup_work_states n ON n.app_id = o.app_id AND n.device_id = o.device_id
        WHERE o.app_id = w.app_id AND o.device_id = w.device_id
          AND (o.install_at, o.install_day, o.platform, o.has_attribution, o.install_click_id, o.install_click_at,
               o.install_click_day, o.install_click_event_at, o.link_path, o.utm_source, o.utm_medium, o.utm_campaign)
              IS NOT DISTINCT FROM
              (n.install_at, n.install_day, n.platform, n.has_attribution, n.install_click_id, n.install_click_at,
               n.install_click_day, n.install_click_event_at, n.link_path, n.utm_source, n.utm_medium, n.utm_campaign));
    -- The key INSERT below filters on the flags: plan it with their real counts.
    ANALYZE pg_temp.rollup_work_devices;

    INSERT INTO pg_temp.rollup_work_keys (app_id, day)
    WITH settings AS MATERIALIZED (
        SELECT a.app_id, s.* FROM (SELECT DISTINCT w.app_id FROM pg_temp.rollup_work_devices w) a
        CROSS JOIN LATERAL rollup_settings(a.app_id) s
    )
    SELECT DISTINCT x.app_id, x.day FROM (
        -- a changed device: old and new install day and install-click day
        SELECT o.app_id, unnest(ARRAY[o.install_day, o.install_click_day]) AS day
        FROM pg_temp.rollup_work_devices w JOIN rollup_devices o ON o.app_id = w.app_id AND o.device_id = w.device_id
        WHERE w.changed AND NOT w.is_new
        UNION ALL
        SELECT n.app_id, unnest(ARRAY[n.install_day, n.install_click_day])
        FROM pg_temp.rollup_work_devices w JOIN pg_temp.rollup_work_states n ON n.app_id = w.app_id AND n.device_id = w.device_id
        WHERE w.changed
        UNION ALL
        -- ... and every day it has events on (rollup_compute_states read all of them, a new
        -- device's from the oldest new device's first queued event on, and kept their days)
        SELECT d.app_id, d.day
        FROM pg_temp.rollup_work_devices w
        JOIN pg_temp.rollup_work_event_days d ON d.app_id = w.app_id AND d.device_id = w.device_id
        WHERE w.changed
        UNION ALL
        -- an unchanged device with new events: the click funnel cohort they can still reach
        SELECT n.app_id, n.install_click_day
        FROM pg_temp.rollup_work_devices w JOIN pg_temp.rollup_work_states n ON n.app_id = w.app_id AND n.device_id = w.device_id
        JOIN settings s ON s.app_id = w.app_id
        WHERE NOT w.changed AND w.min_time IS NOT NULL AND n.install_click_at + s.conversion_window >= w.min_time
        UNION ALL
        -- funnel entries: old and new entry day when the entry moved, the device changed, or the new
        -- events fall within the entry's conversion window
        SELECT o.app_id, o.entered_day
        FROM pg_temp.rollup_work_devices w
        JOIN rollup_funnel_entries o ON o.app_id = w.app_id AND o.device_id = w.device_id
        JOIN settings s ON s.app_id = w.app_id
        LEFT JOIN pg_temp.rollup_work_entries n
            ON n.app_id = o.app_id AND n.funnel_id = o.funnel_id AND n.device_id = o.device_id
        WHERE w.changed OR n.entered_at IS DISTINCT FROM o.entered_at
           OR (w.min_time IS NOT NULL AND o.entered_at + s.conversion_window >= w.min_time)
        UNION ALL
        SELECT n.app_id, n.entered_day
        FROM pg_temp.rollup_work_devices w
        JOIN pg_temp.rollup_work_entries n ON n.app_id = w.app_id AND n.device_id = w.device_id
        JOIN settings s ON s.app_id = w.app_id
        LEFT JOIN rollup_funnel_entries o
            ON o.app_id = n.app_id AND o.funnel_id = n.funnel_id AND o.device_id = n.device_id
        WHERE w.changed OR n.entered_at IS DISTINCT FROM o.entered_at
           OR (w.min_time IS NOT NULL AND n.entered_at + s.conversion_window >= w.min_time)
    ) x
    WHERE x.day IS NOT NULL
    ON CONFLICT DO NOTHING;

    DELETE FROM rollup_devices d USING pg_temp.rollup_work_devices w
    WHERE d.app_id = w.app_id AND d.device_id = w.device_id AND NOT w.is_new;
    INSERT INTO rollup_devices SELECT * FROM pg_temp.rollup_work_states;
    GET DIAGNOSTICS inserted = ROW_COUNT;
    PERFORM rollup_analyze_if_grown('rollup_devices', inserted);
    DELETE FROM rollup_funnel_entries f USING pg_temp.rollup_work_devices w
    WHERE f.app_id = w.app_id AND f.device_id = w.device_id;
    INSERT INTO rollup_funnel_entries SELECT * FROM pg_temp.rollup_work_entries;
    GET DIAGNOSTICS inserted = ROW_COUNT;
    PERFORM rollup_analyze_if_grown('rollup_funnel_entries', inserted);

    FOR k IN SELECT app_id, day FROM pg_temp.rollup_work_keys ORDER BY app_id, day LOOP
        PERFORM rollup_refresh_day(k.app_id, k.day);
    END LOOP;
END
$fn$;

-- Applies all queued work (051's process_rollups after 061's fold, in one step): the queued devices
-- and clicks go from the batch tables and the pending tables straight into the work tables, each
-- device marked new (and so changed) when rollup_devices has no state for it. Returns the number of
-- (app, day) keys recomputed. work_mem is at least 64MB for the pass (its sorts and hashes cover the
-- queued devices' events; with 4MB they spill), then set back.
CREATE OR REPLACE FUNCTION process_rollups()
RETURNS integer
LANGUAGE plpgsql AS $fn$
DECLARE
    processed integer;
    utc_apps text[];
    utc_days date[];
    saved_work_mem text := current_setting('work_mem');
BEGIN
    PERFORM pg_advisory_xact_lock(1684370546, hashtext('rollups:' || current_schema()));
    IF to_regclass('rollup_pending_keys') IS NULL THEN
        -- 022 only (no reports migrations): its own queue, as 061 ran it.
        RETURN process_rollups_queued();
    END IF;
    IF pg_size_bytes(saved_work_mem) < pg_size_bytes('64MB') THEN
        PERFORM set_config('work_mem', '64MB', true);
    END IF;
    PERFORM rollup_prepare_work();
    WITH taken AS (DELETE FROM rollup_pending_utc_days RETURNING app_id, day)
    SELECT array_agg(app_id), array_agg(day) INTO utc_apps, utc_days FROM taken;
    IF utc_apps IS NOT NULL THEN
        PERFORM rollup_analyze_new_partitions(utc_days);
        PERFORM rollup_refresh_events_daily(utc_apps, utc_days);
    END IF;
    WITH taken AS (DELETE FROM rollup_pending_keys RETURNING app_id, day)
    INSERT INTO pg_temp.rollup_work_keys (app_id, day) SELECT DISTINCT app_id, day FROM taken;

    WITH batches AS (DELETE FROM rollup_pending_device_batches RETURNING app_ids, device_ids, min_times),
    pending AS (DELETE FROM rollup_pending_devices RETURNING app_id, device_id, min_time),
    queued AS (
        SELECT x.app_id, x.device_id, min(x.min_time) AS min_time FROM (
            SELECT u.app_id, u.device_id, u.min_time
            FROM batches b CROSS JOIN LATERAL unnest(b.app_ids, b.device_ids, b.min_times) AS u(app_id, device_id, min_time)
            UNION ALL
            SELECT p.app_id, p.device_id, p.min_time FROM pending p
        ) x GROUP BY x.app_id, x.device_id
    )
    INSERT INTO pg_temp.rollup_work_devices (app_id, device_id, min_time, is_new, changed)
    SELECT q.app_id, q.device_id, q.min_time, o.device_id IS NULL, o.device_id IS NULL
    FROM queued q LEFT JOIN rollup_devices o ON o.app_id = q.app_id AND o.device_id = q.device_id;

    WITH batches AS (DELETE FROM rollup_pending_click_batches RETURNING app_ids, click_ids, click_times),
    pending AS (DELETE FROM rollup_pending_clicks RETURNING app_id, click_id, click_time)
    INSERT INTO pg_temp.rollup_work_clicks (app_id, click_id, click_time)
    SELECT DISTINCT x.app_id, x.click_id, x.click_time FROM (
        SELECT u.app_id, u.click_id, u.click_time
        FROM batches b CROSS JOIN LATERAL unnest(b.app_ids, b.click_ids, b.click_times) AS u(app_id, click_id, click_time)
        UNION ALL
        SELECT p.app_id, p.click_id, p.click_time FROM pending p
    ) x;

    PERFORM rollup_apply_work();
    SELECT count(*) INTO processed FROM pg_temp.rollup_work_keys;
    PERFORM set_config('work_mem', saved_work_mem, true);
    RETURN processed;
END
$fn$;

-- rollup_refresh_day (054) kept rollup_cohort_events_total by subtracting the day's old cohort rows
-- from every total before the recomputation and adding the new ones after: two writes of every
-- (install day, link, name) the day has (9,400 per day at 1M raw rows; 0.2 s of a 0.85 s refresh),
-- mostly to put back the value it had. Now the old sums are noted before (a temporary table) and
-- only the net change is written after; a total that reaches 0 is deleted, as before. The totals
-- are the same (each is still the sum of its cohort rows over all event days).
CREATE OR REPLACE FUNCTION rollup_attribution_before(p_app text, p_day date) RETURNS void
LANGUAGE plpgsql AS $fn$
BEGIN
    IF to_regclass('pg_temp.rollup_work_attribution') IS NULL THEN
        CREATE TEMP TABLE rollup_work_attribution (day date NOT NULL, path text NOT NULL) ON COMMIT DELETE ROWS;
    END IF;
    IF to_regclass('pg_temp.rollup_work_cohort_old') IS NULL THEN
        CREATE TEMP TABLE rollup_work_cohort_old (install_day date NOT NULL, path text NOT NULL, name text NOT NULL,
            events bigint NOT NULL) ON COMMIT DELETE ROWS;
    END IF;
    TRUNCATE pg_temp.rollup_work_attribution;
    DELETE FROM pg_temp.rollup_work_cohort_old;
    INSERT INTO pg_temp.rollup_work_attribution
    SELECT p_day, s.path FROM rollup_attribution_summary s WHERE s.app_id = p_app AND s.day = p_day
    UNION
    SELECT c.install_day, c.path FROM rollup_cohort_events_daily c WHERE c.app_id = p_app AND c.day = p_day;
    INSERT INTO pg_temp.rollup_work_cohort_old (install_day, path, name, events)
    SELECT c.install_day, c.path, c.name, sum(c.events) FROM rollup_cohort_events_daily c
    WHERE c.app_id = p_app AND c.day = p_day GROUP BY c.install_day, c.path, c.name;
END
$fn$;

CREATE OR REPLACE FUNCTION rollup_attribution_after(p_app text, p_day date) RETURNS void
LANGUAGE plpgsql AS $fn$
DECLARE
    zero_days date[];
    zero_paths text[];
    zero_names text[];
BEGIN
    -- The net change per total; the totals it brought to 0 are collected (a statement cannot see
    -- its own upsert's results, so they are deleted by the next one).
    WITH fresh AS (
        SELECT c.install_day, c.path, c.name, sum(c.events) AS events FROM rollup_cohort_events_daily c
        WHERE c.app_id = p_app AND c.day = p_day GROUP BY c.install_day, c.path, c.name
    ), delta AS (
        SELECT coalesce(n.install_day, o.install_day) AS install_day, coalesce(n.path, o.path) AS path,
               coalesce(n.name, o.name) AS name, coalesce(n.events, 0) - coalesce(o.events, 0) AS events
        FROM fresh n FULL JOIN pg_temp.rollup_work_cohort_old o
            ON o.install_day = n.install_day AND o.path = n.path AND o.name = n.name
    ), changed AS (
        INSERT INTO rollup_cohort_events_total AS t (app_id, install_day, path, name, events)
        SELECT p_app, d.install_day, d.path, d.name, d.events FROM delta d WHERE d.events <> 0
        ON CONFLICT (app_id, install_day, path, name) DO UPDATE SET events = t.events + EXCLUDED.events
        RETURNING t.install_day, t.path, t.name, t.events
    )
    SELECT array_agg(c.install_day), array_agg(c.path), array_agg(c.name) INTO zero_days, zero_paths, zero_names
    FROM changed c WHERE c.events = 0;
    IF zero_days IS NOT NULL THEN
        DELETE FROM rollup_cohort_events_total t
        USING unnest(zero_days, zero_paths, zero_names) AS z(install_day, path, name)
        WHERE t.app_id = p_app AND t.install_day = z.install_day AND t.path = z.path AND t.name = z.name
          AND t.events = 0;
    END IF;
    INSERT INTO pg_temp.rollup_work_attribution
    SELECT p_day, r.path FROM rollup_link_daily r WHERE r.app_id = p_app AND r.day = p_day
    UNION
    SELECT p_day, r.path FROM rollup_link_events_daily r WHERE r.app_id = p_app AND r.day = p_day AND r.kind = 'event'
    UNION
    SELECT c.install_day, c.path FROM rollup_cohort_events_daily c WHERE c.app_id = p_app AND c.day = p_day;
    PERFORM rollup_refresh_attribution_summary(p_app);
END
$fn$;

-- 069_attribution_any_install_click: a device is attributed through ANY of its install click ids,
-- not only its earliest event's.
--
-- reports.md: a device is non-organic, attributed to link L, "when any of its events carries
-- attribution.install_click_id of a click on L made at most the install lookback (7 days) before
-- the device's install". 051/062 took only the install_click_id of the device's earliest event
-- carrying one: a device whose first event carried 'cX' (a click never loaded) and a later event
-- 'c6' (a loaded click 6 h before the install) was reported organic.
--
-- The rule now (rollup_compute_states): among every install_click_id the device's events carry,
-- the chosen install click is the loaded click (rollup_clicks) made at most install_lookback before
-- the install and not after it, the LATEST such click when several qualify (ties: the one whose
-- first carrying event is earliest, then by event_id); when none qualifies (organic), the earliest
-- event's install_click_id as before (it still joins the device to that click's funnel cohort).
-- install_click_event_at is the earliest event carrying the chosen id. The rebuild and both
-- incremental paths (refresh_rollups, process_rollups) derive devices through this function.
--
-- Incremental maintenance: a device's state now depends on every install click id it carries, so
-- the pass must re-derive a device when any of them arrives later, and when a new event carries
-- another id. The ids other than the chosen one are kept in rollup_device_install_clicks (empty for
-- the common device whose events carry one click id, or none), and
--   * a touched click re-derives the devices whose chosen install click it is (rollup_apply_work,
--     as before, through rollup_devices_install_click) and those that carry it as another id (this
--     table, by its primary key);
--   * a known device stays "stable" (old state copied, only its new events read) only when its new
--     events carry no install click id other than its chosen one (before: none earlier than it).
-- The common case reads nothing more than before: no per-device scan of all events is added; the
-- candidate clicks are the same events the state INSERT already read for a re-derived device.
--
-- Existing derived state follows the old rule until it is recomputed: run `detour-analytics report
-- rebuild` after migrating (devices touched by later loads are re-derived with the new rule anyway).

-- The install click ids a device's events carry other than its chosen one (rollup_devices.
-- install_click_id), so that the arrival of any of them re-derives the device.
CREATE TABLE rollup_device_install_clicks (
    app_id text NOT NULL,
    click_id text NOT NULL,
    device_id text NOT NULL,
    PRIMARY KEY (app_id, click_id, device_id)
);
CREATE INDEX rollup_device_install_clicks_device ON rollup_device_install_clicks (app_id, device_id);

-- 062's rollup_compute_states with the rule above; otherwise unchanged.
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
    IF to_regclass('pg_temp.rollup_work_install_clicks') IS NULL THEN
        CREATE TEMP TABLE rollup_work_install_clicks (app_id text NOT NULL, click_id text NOT NULL,
            device_id text NOT NULL) ON COMMIT DELETE ROWS;
    ELSE
        DELETE FROM pg_temp.rollup_work_install_clicks;
    END IF;
    UPDATE pg_temp.rollup_work_devices w SET is_new = true
    WHERE NOT w.is_new
      AND NOT EXISTS (SELECT 1 FROM rollup_devices o WHERE o.app_id = w.app_id AND o.device_id = w.device_id);
    -- Devices one of whose other install clicks is among the touched clicks are re-derived too
    -- (rollup_apply_work adds those whose chosen install click is; no min_time: never stable).
    INSERT INTO pg_temp.rollup_work_devices (app_id, device_id, min_time)
    SELECT DISTINCT x.app_id, x.device_id, NULL::timestamptz
    FROM pg_temp.rollup_work_clicks k
    JOIN rollup_device_install_clicks x ON x.app_id = k.app_id AND x.click_id = k.click_id
    JOIN rollup_devices d ON d.app_id = x.app_id AND d.device_id = x.device_id
    ON CONFLICT DO NOTHING;
    UPDATE pg_temp.rollup_work_devices w SET stable = true
    FROM rollup_devices o
    WHERE o.app_id = w.app_id AND o.device_id = w.device_id AND w.min_time IS NOT NULL AND w.min_time >= o.install_at
      -- none of its install clicks just arrived
      AND NOT EXISTS (
          SELECT 1 FROM pg_temp.rollup_work_clicks k WHERE k.app_id = o.app_id AND k.click_id = o.install_click_id)
      AND NOT EXISTS (
          SELECT 1 FROM pg_temp.rollup_work_clicks k
          JOIN rollup_device_install_clicks x ON x.app_id = k.app_id AND x.click_id = k.click_id
          WHERE x.app_id = w.app_id AND x.device_id = w.device_id)
      -- no new event brings a first attribution object, another install click id, or its install
      -- click id on an earlier event
      AND NOT EXISTS (
          SELECT 1 FROM events e
          WHERE e.app_id = w.app_id AND e.device_id = w.device_id AND e.event_time >= w.min_time
            AND ((NOT o.has_attribution
                  AND (e.open_type IS NOT NULL OR e.install_click_id IS NOT NULL OR e.open_click_id IS NOT NULL))
                 OR (e.install_click_id IS NOT NULL
                     AND (o.install_click_id IS NULL OR e.install_click_id <> o.install_click_id
                          OR e.event_time < o.install_click_event_at))));
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
    ), settings AS MATERIALIZED (
        SELECT a.app_id, s.* FROM (SELECT DISTINCT w.app_id FROM pg_temp.rollup_work_devices w) a
        CROSS JOIN LATERAL rollup_settings(a.app_id) s
    ), flags AS (
        -- per device: whether any event carries an attribution object, and the install click ids its
        -- events carry in event order (NULL when none), each with its event's time
        SELECT app_id, device_id, bool_or(attributed) AS has_attribution,
               array_agg(install_click_id ORDER BY event_time, event_id) FILTER (WHERE install_click_id IS NOT NULL)
                   AS clicks,
               array_agg(event_time ORDER BY event_time, event_id) FILTER (WHERE install_click_id IS NOT NULL)
                   AS click_events
        FROM ev GROUP BY app_id, device_id
    ), derived AS MATERIALIZED (
        -- One row per device. The chosen install click: the latest loaded click within the lookback;
        -- else (organic) the earliest event's, as before; its event time is that of the earliest event
        -- carrying it. Chosen per device from its own short list (no join of one CTE with another
        -- after the grouping: their row estimates are guesses, and a join of a filtered CTE was
        -- planned as a nested loop over every device, 60x the pass).
        SELECT f.app_id, f.device_id, f.event_time AS install_at, f.platform, g.has_attribution, g.clicks,
               i.click AS install_click_id, i.at AS install_click_event_at
        FROM first_event f
        JOIN flags g ON g.app_id = f.app_id AND g.device_id = f.device_id
        JOIN settings s ON s.app_id = f.app_id
        LEFT JOIN LATERAL (
            SELECT u.click, u.at FROM unnest(g.clicks, g.click_events) WITH ORDINALITY AS u(click, at, n)
            LEFT JOIN rollup_clicks c ON c.app_id = f.app_id AND c.click_id = u.click
            WHERE g.clicks IS NOT NULL
            ORDER BY coalesce(c.click_time <= f.event_time AND f.event_time - c.click_time <= s.install_lookback,
                              false) DESC,
                     CASE WHEN c.click_time <= f.event_time AND f.event_time - c.click_time <= s.install_lookback
                          THEN c.click_time END DESC,
                     u.n
            LIMIT 1) i ON true
    ), others AS (
        -- every other install click id of the device, once
        INSERT INTO pg_temp.rollup_work_install_clicks (app_id, click_id, device_id)
        SELECT DISTINCT d.app_id, u.click, d.device_id
        FROM derived d CROSS JOIN LATERAL unnest(d.clicks) AS u(click)
        WHERE d.clicks IS NOT NULL AND u.click <> d.install_click_id
    ), event_days AS (
        INSERT INTO pg_temp.rollup_work_event_days (app_id, device_id, day)
        SELECT DISTINCT ev.app_id, ev.device_id, (ev.event_time AT TIME ZONE s.time_zone)::date
        FROM ev JOIN settings s ON s.app_id = ev.app_id
        WHERE p_event_days
    )
    INSERT INTO pg_temp.rollup_work_states (app_id, device_id, install_at, install_day, platform, has_attribution,
        install_click_id, install_click_at, install_click_day, install_click_event_at, link_path, utm_source,
        utm_medium, utm_campaign)
    SELECT d.app_id, d.device_id, d.install_at, (d.install_at AT TIME ZONE s.time_zone)::date, coalesce(d.platform, ''),
           d.has_attribution, d.install_click_id, c.click_time, c.click_day, d.install_click_event_at,
           CASE WHEN v.ok THEN c.path END, CASE WHEN v.ok THEN c.utm_source END,
           CASE WHEN v.ok THEN c.utm_medium END, CASE WHEN v.ok THEN c.utm_campaign END
    FROM derived d
    JOIN settings s ON s.app_id = d.app_id
    LEFT JOIN rollup_clicks c ON c.app_id = d.app_id AND c.click_id = d.install_click_id
    CROSS JOIN LATERAL (
        SELECT (c.click_time <= d.install_at AND d.install_at - c.click_time <= s.install_lookback) AS ok) v;
    ANALYZE pg_temp.rollup_work_states;

    -- The other install clicks of every device derived here replace its old ones (a stable device
    -- carries no new install click id, so it keeps its own).
    DELETE FROM rollup_device_install_clicks x USING pg_temp.rollup_work_devices w
    WHERE x.app_id = w.app_id AND x.device_id = w.device_id AND NOT w.stable;
    INSERT INTO rollup_device_install_clicks (app_id, click_id, device_id)
    SELECT app_id, click_id, device_id FROM pg_temp.rollup_work_install_clicks;

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

-- The 051 signature (rebuild_rollups calls it, after emptying every derived table): every device is
-- re-derived, so its other install clicks start empty too.
CREATE OR REPLACE FUNCTION rollup_compute_states() RETURNS void
LANGUAGE plpgsql AS $fn$
BEGIN
    DELETE FROM rollup_device_install_clicks;
    PERFORM rollup_compute_states(false);
END
$fn$;

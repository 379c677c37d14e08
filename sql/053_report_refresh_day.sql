-- 053_report_refresh_day: the unit of rollup work, rollup_refresh_day(app, day), called by
-- rollup_apply_work and rebuild_rollups (051). Each statement reads one local day of a raw table
-- (partition-pruned) or that day's cohort from the derived tables, and replaces the day's rows of
-- every rollup table (050).

-- Recomputes every rollup row of one (app, local day) key. Each statement reads one local day of a
-- raw table (partition-pruned), or the day's cohort from rollup_devices / rollup_funnel_entries.
CREATE OR REPLACE FUNCTION rollup_refresh_day(p_app text, p_day date) RETURNS void
LANGUAGE plpgsql AS $fn$
DECLARE
    s record;
    lo timestamptz;
    hi timestamptz;
    f record;
BEGIN
    IF to_regclass('pg_temp.rollup_work_link') IS NULL THEN
        -- Per-day intermediates (temporary, emptied at commit).
        CREATE TEMP TABLE rollup_work_link (
            path text, platform text, utm_source text, utm_medium text, utm_campaign text, clicks integer,
            opens_ul integer, matched integer, attributed integer, reengaged integer, last_touch integer)
            ON COMMIT DELETE ROWS;
        CREATE TEMP TABLE rollup_work_events (
            install_day date, path text, platform text, kind text, name text, events integer, currency text,
            revenue numeric) ON COMMIT DELETE ROWS;
    END IF;
    SELECT * INTO s FROM rollup_settings(p_app);
    lo := report_day_start(p_day, s.time_zone);
    hi := report_day_start(p_day + 1, s.time_zone);

    -- Per link: clicks, universal-link opens, matched and attributed installs, re-engagements,
    -- last-touch opens; at the grain of platform and UTM first, then rolled into the two tables.
    DELETE FROM rollup_link_daily WHERE app_id = p_app AND day = p_day;
    DELETE FROM rollup_link_utm_daily WHERE app_id = p_app AND day = p_day;
    TRUNCATE pg_temp.rollup_work_link;
    INSERT INTO pg_temp.rollup_work_link
    SELECT c.path, coalesce(c.platform, ''), coalesce(c.utm_source, ''), coalesce(c.utm_medium, ''),
           coalesce(c.utm_campaign, ''), (c.click_kind = 'web')::int, (c.click_kind = 'universal_link')::int, 0, 0, 0, 0
    FROM clicks c WHERE c.app_id = p_app AND c.click_time >= lo AND c.click_time < hi
    UNION ALL
    SELECT c.path, c.platform, c.utm_source, c.utm_medium, c.utm_campaign, 0, 0, 1, 0, 0, 0
    FROM matches m JOIN rollup_clicks c ON c.app_id = m.app_id AND c.click_id = m.click_id
    WHERE m.app_id = p_app AND m.match_time >= lo AND m.match_time < hi
    UNION ALL
    SELECT d.link_path, d.platform, d.utm_source, d.utm_medium, d.utm_campaign, 0, 0, 0, 1, 0, 0
    FROM rollup_devices d WHERE d.app_id = p_app AND d.install_day = p_day AND d.link_path IS NOT NULL
    UNION ALL
    SELECT o.path, o.platform, '', '', '', 0, 0, 0, 0,
           (count(DISTINCT o.device_id) FILTER (WHERE o.reengaged))::int, count(*)::int
    FROM (
        SELECT c.path, coalesce(d.platform, e.platform, '') AS platform, e.device_id,
               coalesce(e.event_time - d.install_at >= s.reengagement_inactivity, false) AS reengaged
        FROM events e
        JOIN rollup_clicks c ON c.app_id = e.app_id AND c.click_id = e.open_click_id
        LEFT JOIN rollup_devices d ON d.app_id = e.app_id AND d.device_id = e.device_id
        WHERE e.app_id = p_app AND e.event_time >= lo AND e.event_time < hi AND e.kind = 'event'
          AND e.open_click_id IS NOT NULL
    ) o
    GROUP BY o.path, o.platform;

    INSERT INTO rollup_link_daily (app_id, day, path, clicks, universal_link_opens, matched_installs,
        attributed_installs, reengagements, last_touch_opens, clicks_ios, clicks_android, universal_link_opens_ios,
        universal_link_opens_android, matched_installs_ios, matched_installs_android, attributed_installs_ios,
        attributed_installs_android, reengagements_ios, reengagements_android)
    SELECT p_app, p_day, u.path, sum(u.clicks), sum(u.opens_ul), sum(u.matched), sum(u.attributed), sum(u.reengaged),
           sum(u.last_touch),
           coalesce(sum(u.clicks) FILTER (WHERE u.platform = 'ios'), 0),
           coalesce(sum(u.clicks) FILTER (WHERE u.platform = 'android'), 0),
           coalesce(sum(u.opens_ul) FILTER (WHERE u.platform = 'ios'), 0),
           coalesce(sum(u.opens_ul) FILTER (WHERE u.platform = 'android'), 0),
           coalesce(sum(u.matched) FILTER (WHERE u.platform = 'ios'), 0),
           coalesce(sum(u.matched) FILTER (WHERE u.platform = 'android'), 0),
           coalesce(sum(u.attributed) FILTER (WHERE u.platform = 'ios'), 0),
           coalesce(sum(u.attributed) FILTER (WHERE u.platform = 'android'), 0),
           coalesce(sum(u.reengaged) FILTER (WHERE u.platform = 'ios'), 0),
           coalesce(sum(u.reengaged) FILTER (WHERE u.platform = 'android'), 0)
    FROM pg_temp.rollup_work_link u
    GROUP BY u.path;

    INSERT INTO rollup_link_utm_daily (app_id, day, path, utm_source, utm_medium, utm_campaign, clicks,
        universal_link_opens, matched_installs, attributed_installs)
    SELECT p_app, p_day, u.path, u.utm_source, u.utm_medium, u.utm_campaign, sum(u.clicks), sum(u.opens_ul),
           sum(u.matched), sum(u.attributed)
    FROM pg_temp.rollup_work_link u
    WHERE u.clicks + u.opens_ul + u.matched + u.attributed > 0
    GROUP BY u.path, u.utm_source, u.utm_medium, u.utm_campaign;

    -- Events and revenue of attributed devices: per link and day, and per install-day cohort.
    DELETE FROM rollup_link_events_daily WHERE app_id = p_app AND day = p_day;
    DELETE FROM rollup_cohort_events_daily WHERE app_id = p_app AND day = p_day;
    DELETE FROM rollup_link_revenue_daily WHERE app_id = p_app AND day = p_day;
    DELETE FROM rollup_cohort_revenue_daily WHERE app_id = p_app AND day = p_day;
    TRUNCATE pg_temp.rollup_work_events;
    INSERT INTO pg_temp.rollup_work_events
    SELECT d.install_day, d.link_path, d.platform, e.kind, e.name, count(*)::int,
           CASE WHEN e.kind = 'event' AND e.name IN ('purchase', 'refund') THEN report_revenue_currency(e.data) END,
           CASE WHEN e.kind = 'event' AND e.name IN ('purchase', 'refund') THEN
               sum(CASE WHEN e.name = 'refund' THEN -report_revenue_amount(e.data) ELSE report_revenue_amount(e.data) END)
           END
    FROM events e JOIN rollup_devices d ON d.app_id = e.app_id AND d.device_id = e.device_id
    WHERE e.app_id = p_app AND e.event_time >= lo AND e.event_time < hi AND d.link_path IS NOT NULL
    GROUP BY d.install_day, d.link_path, d.platform, e.kind, e.name,
             CASE WHEN e.kind = 'event' AND e.name IN ('purchase', 'refund') THEN report_revenue_currency(e.data) END;

    INSERT INTO rollup_link_events_daily (app_id, day, path, kind, name, events, events_ios, events_android)
    SELECT p_app, p_day, w.path, w.kind, w.name, sum(w.events),
           coalesce(sum(w.events) FILTER (WHERE w.platform = 'ios'), 0),
           coalesce(sum(w.events) FILTER (WHERE w.platform = 'android'), 0)
    FROM pg_temp.rollup_work_events w GROUP BY w.path, w.kind, w.name;
    INSERT INTO rollup_cohort_events_daily (app_id, day, install_day, path, name, events)
    SELECT p_app, p_day, w.install_day, w.path, w.name, sum(w.events)
    FROM pg_temp.rollup_work_events w WHERE w.kind = 'event' GROUP BY w.install_day, w.path, w.name;
    INSERT INTO rollup_link_revenue_daily (app_id, day, path, currency, revenue, revenue_ios, revenue_android)
    SELECT p_app, p_day, w.path, w.currency, sum(w.revenue),
           coalesce(sum(w.revenue) FILTER (WHERE w.platform = 'ios'), 0),
           coalesce(sum(w.revenue) FILTER (WHERE w.platform = 'android'), 0)
    FROM pg_temp.rollup_work_events w WHERE w.revenue IS NOT NULL GROUP BY w.path, w.currency;
    INSERT INTO rollup_cohort_revenue_daily (app_id, day, install_day, path, currency, revenue)
    SELECT p_app, p_day, w.install_day, w.path, w.currency, sum(w.revenue)
    FROM pg_temp.rollup_work_events w WHERE w.revenue IS NOT NULL GROUP BY w.install_day, w.path, w.currency;

    -- Installs of the day (cohort sizes), by link ('' = organic).
    DELETE FROM rollup_installs_daily WHERE app_id = p_app AND day = p_day;
    INSERT INTO rollup_installs_daily (app_id, day, path, platform, unattributable, installs)
    SELECT p_app, p_day, coalesce(d.link_path, ''), d.platform, NOT d.has_attribution, count(*)
    FROM rollup_devices d WHERE d.app_id = p_app AND d.install_day = p_day
    GROUP BY coalesce(d.link_path, ''), d.platform, NOT d.has_attribution;

    -- Retention: devices returning (app_open) today, by cohort N = 1, 3, 7, 14, 30 days ago.
    DELETE FROM rollup_retention_daily WHERE app_id = p_app AND day = p_day;
    INSERT INTO rollup_retention_daily (app_id, day, install_day, path, returned)
    SELECT p_app, p_day, d.install_day, coalesce(d.link_path, ''), count(DISTINCT d.device_id)
    FROM events e JOIN rollup_devices d ON d.app_id = e.app_id AND d.device_id = e.device_id
    WHERE e.app_id = p_app AND e.event_time >= lo AND e.event_time < hi AND e.name = 'app_open'
      AND d.install_day IN (p_day - 1, p_day - 3, p_day - 7, p_day - 14, p_day - 30)
    GROUP BY d.install_day, coalesce(d.link_path, '');

    -- Funnels whose cohort is this day.
    DELETE FROM rollup_funnel_daily WHERE app_id = p_app AND day = p_day;
    FOR f IN
        SELECT 'default'::text AS funnel_id, ARRAY['click', 'install', 'app_open', 'sign_up', 'purchase']::text[] AS steps
        UNION ALL
        SELECT x.funnel_id, x.steps FROM funnels x WHERE x.app_id = p_app
    LOOP
        IF f.steps[1] = 'click' THEN
            -- MATERIALIZED: report_funnel_times runs once per click, not once per use of its result.
            INSERT INTO rollup_funnel_daily (app_id, funnel_id, day, path, step, step_name, devices, devices_previous,
                                             devices_first, median_from_previous)
            WITH t AS MATERIALIZED (
                SELECT c.path, report_funnel_times(p_app, d.device_id, d.install_at, c.click_time, f.steps,
                                                   c.click_time + s.conversion_window) AS times
                FROM clicks c
                LEFT JOIN LATERAL (
                    SELECT r.device_id, r.install_at FROM rollup_devices r
                    WHERE r.app_id = c.app_id AND r.install_click_id = c.click_id
                    ORDER BY r.install_at, r.device_id LIMIT 1) d ON true
                WHERE c.app_id = p_app AND c.click_time >= lo AND c.click_time < hi AND c.click_kind = 'web'
            )
            , reached AS (
                SELECT t.path, g.step, count(*)::int AS devices,
                       percentile_cont(0.5) WITHIN GROUP (ORDER BY t.times[g.step] - t.times[g.step - 1]) AS median
                FROM t JOIN generate_series(1, cardinality(f.steps)) g(step) ON g.step <= cardinality(t.times)
                GROUP BY t.path, g.step
            ), grid AS (
                SELECT p.path, g.step, coalesce(r.devices, 0) AS devices, r.median
                FROM (SELECT DISTINCT t.path FROM t) p
                CROSS JOIN generate_series(1, cardinality(f.steps)) g(step)
                LEFT JOIN reached r ON r.path = p.path AND r.step = g.step
            )
            SELECT p_app, f.funnel_id, p_day, x.path, x.step, f.steps[x.step], x.devices,
                   lag(x.devices) OVER (PARTITION BY x.path ORDER BY x.step),
                   first_value(x.devices) OVER (PARTITION BY x.path ORDER BY x.step), x.median
            FROM grid x;
        ELSE
            INSERT INTO rollup_funnel_daily (app_id, funnel_id, day, path, step, step_name, devices, devices_previous,
                                             devices_first, median_from_previous)
            WITH t AS MATERIALIZED (
                SELECT coalesce(d.link_path, '') AS path,
                       report_funnel_times(p_app, n.device_id, d.install_at, n.entered_at, f.steps,
                                           n.entered_at + s.conversion_window) AS times
                FROM rollup_funnel_entries n
                JOIN rollup_devices d ON d.app_id = n.app_id AND d.device_id = n.device_id
                WHERE n.app_id = p_app AND n.funnel_id = f.funnel_id AND n.entered_day = p_day
            )
            , reached AS (
                SELECT t.path, g.step, count(*)::int AS devices,
                       percentile_cont(0.5) WITHIN GROUP (ORDER BY t.times[g.step] - t.times[g.step - 1]) AS median
                FROM t JOIN generate_series(1, cardinality(f.steps)) g(step) ON g.step <= cardinality(t.times)
                GROUP BY t.path, g.step
            ), grid AS (
                SELECT p.path, g.step, coalesce(r.devices, 0) AS devices, r.median
                FROM (SELECT DISTINCT t.path FROM t) p
                CROSS JOIN generate_series(1, cardinality(f.steps)) g(step)
                LEFT JOIN reached r ON r.path = p.path AND r.step = g.step
            )
            SELECT p_app, f.funnel_id, p_day, x.path, x.step, f.steps[x.step], x.devices,
                   lag(x.devices) OVER (PARTITION BY x.path ORDER BY x.step),
                   first_value(x.devices) OVER (PARTITION BY x.path ORDER BY x.step), x.median
            FROM grid x;
        END IF;
    END LOOP;
END
$fn$;

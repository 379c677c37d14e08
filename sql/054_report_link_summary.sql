-- 054_report_link_summary: the per-link, funnel, attribution and retention reports read as one
-- compact row per link and day (per funnel, link and cohort day; per link and install day).
--
-- The per-link report (ReportService.links, `report links`, GET /api/reports/links, the daily job)
-- used to read four views: one row per link and day, plus one per link, day, kind and event name,
-- one per currency and one per UTM variant. At 1,000 links that is hundreds of thousands of rows for
-- 30 days (sorted, sent and decoded), whatever the rollups cost. rollup_link_summary holds the same
-- numbers as one row per (app, local day, link): the per-link counts of rollup_link_daily and the
-- events, revenue and UTM breakdown of that link and day as parallel arrays. It is derived from the
-- day's rows of the other rollups by rollup_refresh_day (so it is exactly as incremental as they
-- are: one (app, day) key rewrites that day's rows only) and read through report_link_summary.
--
-- rollup_funnel_summary does the same for the funnel report (one row per funnel, link and cohort
-- day with its steps as arrays, instead of one row per step), read through report_funnel_summary.
--
-- rollup_attribution_summary does it for the attribution report: per (app, day, link) the event-day
-- numbers of that day and the install-cohort numbers of the devices installed that day. The cohort
-- side sums every later event day, so it is kept by delta: rollup_cohort_events_total (per install
-- day, link and name) has the day's old rollup_cohort_events_daily rows subtracted and its new ones
-- added when a day is refreshed, and only the summary rows of the (install day, link) pairs the day
-- touched are rewritten. The work follows the refreshed day's rows, not the tables' size.
--
-- rollup_retention_summary holds report_retention's sums per (install day, link): cohort size and
-- d1..d30. A day's refresh changes its own installs and the retention rows of the cohorts 1, 3, 7,
-- 14 and 30 days before it, so it rewrites those six install days' rows.
--
-- Also: rebuild_rollups analyses the derived tables it has just filled (rollup_clicks,
-- rollup_devices, rollup_funnel_entries) before the per-day loop. Without it the loop planned
-- against the statistics of the emptied tables (e.g. probed rollup_devices through the install-day
-- index and filtered on device_id, once per event).

CREATE TABLE rollup_link_summary (
    app_id text NOT NULL,
    day date NOT NULL,
    path text NOT NULL,
    -- rollup_link_daily's report counts (0 when the link has only events or revenue that day)
    clicks integer NOT NULL,
    universal_link_opens integer NOT NULL,
    matched_installs integer NOT NULL,
    attributed_installs integer NOT NULL,
    reengagements integer NOT NULL,
    clicks_ios integer NOT NULL,
    clicks_android integer NOT NULL,
    universal_link_opens_ios integer NOT NULL,
    universal_link_opens_android integer NOT NULL,
    matched_installs_ios integer NOT NULL,
    matched_installs_android integer NOT NULL,
    attributed_installs_ios integer NOT NULL,
    attributed_installs_android integer NOT NULL,
    reengagements_ios integer NOT NULL,
    reengagements_android integer NOT NULL,
    -- rollup_link_events_daily, by name: actions (kind 'event') and retention events
    event_names text[] NOT NULL,
    event_counts integer[] NOT NULL,
    retention_names text[] NOT NULL,
    retention_counts integer[] NOT NULL,
    -- rollup_link_revenue_daily: currency and exact amount (numeric as text)
    revenue_currencies text[] NOT NULL,
    revenue_amounts text[] NOT NULL,
    -- rollup_link_utm_daily, ordered by source, medium, campaign ('' = absent, first); install rate
    -- as report_link_daily_utm prints it ('' when there were no clicks)
    utm_sources text[] NOT NULL,
    utm_mediums text[] NOT NULL,
    utm_campaigns text[] NOT NULL,
    utm_clicks integer[] NOT NULL,
    utm_universal_link_opens integer[] NOT NULL,
    utm_matched_installs integer[] NOT NULL,
    utm_attributed_installs integer[] NOT NULL,
    utm_install_rates text[] NOT NULL,
    PRIMARY KEY (app_id, day, path)
);

-- Rewrites the summary rows of one (app, day) from that day's rows of the other link rollups. A
-- link has a row when report_link_daily shows it that day or it has events or revenue then.
CREATE FUNCTION rollup_refresh_link_summary(p_app text, p_day date) RETURNS void
LANGUAGE sql AS $fn$
    DELETE FROM rollup_link_summary WHERE app_id = p_app AND day = p_day;
    INSERT INTO rollup_link_summary
    SELECT p_app, p_day, k.path,
           coalesce(l.clicks, 0), coalesce(l.universal_link_opens, 0), coalesce(l.matched_installs, 0),
           coalesce(l.attributed_installs, 0), coalesce(l.reengagements, 0),
           coalesce(l.clicks_ios, 0), coalesce(l.clicks_android, 0), coalesce(l.universal_link_opens_ios, 0),
           coalesce(l.universal_link_opens_android, 0), coalesce(l.matched_installs_ios, 0),
           coalesce(l.matched_installs_android, 0), coalesce(l.attributed_installs_ios, 0),
           coalesce(l.attributed_installs_android, 0), coalesce(l.reengagements_ios, 0),
           coalesce(l.reengagements_android, 0),
           coalesce(e.event_names, '{}'), coalesce(e.event_counts, '{}'),
           coalesce(e.retention_names, '{}'), coalesce(e.retention_counts, '{}'),
           coalesce(v.currencies, '{}'), coalesce(v.amounts, '{}'),
           coalesce(u.sources, '{}'), coalesce(u.mediums, '{}'), coalesce(u.campaigns, '{}'),
           coalesce(u.clicks, '{}'), coalesce(u.opens, '{}'), coalesce(u.matched, '{}'),
           coalesce(u.attributed, '{}'), coalesce(u.rates, '{}')
    FROM (
        SELECT r.path FROM rollup_link_daily r
        WHERE r.app_id = p_app AND r.day = p_day
          AND r.clicks + r.universal_link_opens + r.matched_installs + r.attributed_installs + r.reengagements > 0
        UNION
        SELECT r.path FROM rollup_link_events_daily r WHERE r.app_id = p_app AND r.day = p_day
        UNION
        SELECT r.path FROM rollup_link_revenue_daily r WHERE r.app_id = p_app AND r.day = p_day
    ) k
    LEFT JOIN rollup_link_daily l
        ON l.app_id = p_app AND l.day = p_day AND l.path = k.path
       AND l.clicks + l.universal_link_opens + l.matched_installs + l.attributed_installs + l.reengagements > 0
    LEFT JOIN (
        SELECT r.path,
               array_agg(r.name ORDER BY r.name) FILTER (WHERE r.kind = 'event') AS event_names,
               array_agg(r.events ORDER BY r.name) FILTER (WHERE r.kind = 'event') AS event_counts,
               array_agg(r.name ORDER BY r.name) FILTER (WHERE r.kind <> 'event') AS retention_names,
               array_agg(r.events ORDER BY r.name) FILTER (WHERE r.kind <> 'event') AS retention_counts
        FROM rollup_link_events_daily r WHERE r.app_id = p_app AND r.day = p_day
        GROUP BY r.path
    ) e ON e.path = k.path
    LEFT JOIN (
        SELECT r.path, array_agg(r.currency ORDER BY r.currency) AS currencies,
               array_agg(r.revenue::text ORDER BY r.currency) AS amounts
        FROM rollup_link_revenue_daily r WHERE r.app_id = p_app AND r.day = p_day
        GROUP BY r.path
    ) v ON v.path = k.path
    LEFT JOIN (
        SELECT r.path,
               array_agg(r.utm_source ORDER BY r.utm_source, r.utm_medium, r.utm_campaign) AS sources,
               array_agg(r.utm_medium ORDER BY r.utm_source, r.utm_medium, r.utm_campaign) AS mediums,
               array_agg(r.utm_campaign ORDER BY r.utm_source, r.utm_medium, r.utm_campaign) AS campaigns,
               array_agg(r.clicks ORDER BY r.utm_source, r.utm_medium, r.utm_campaign) AS clicks,
               array_agg(r.universal_link_opens ORDER BY r.utm_source, r.utm_medium, r.utm_campaign) AS opens,
               array_agg(r.matched_installs ORDER BY r.utm_source, r.utm_medium, r.utm_campaign) AS matched,
               array_agg(r.attributed_installs ORDER BY r.utm_source, r.utm_medium, r.utm_campaign) AS attributed,
               array_agg(coalesce(CASE WHEN r.clicks > 0 THEN round(r.matched_installs::numeric / r.clicks, 6)::text END, '')
                         ORDER BY r.utm_source, r.utm_medium, r.utm_campaign) AS rates
        FROM rollup_link_utm_daily r WHERE r.app_id = p_app AND r.day = p_day
        GROUP BY r.path
    ) u ON u.path = k.path;
$fn$;

-- The funnel report per (app, cohort day, funnel, link): rollup_funnel_daily's steps as arrays in
-- step order, with the rates and medians exactly as report_funnel prints them ('' = NULL).
CREATE TABLE rollup_funnel_summary (
    app_id text NOT NULL,
    day date NOT NULL,
    funnel_id text NOT NULL,
    path text NOT NULL,
    steps integer[] NOT NULL,
    step_names text[] NOT NULL,
    devices integer[] NOT NULL,
    conversions_from_previous text[] NOT NULL,
    conversions_overall text[] NOT NULL,
    median_seconds_from_previous text[] NOT NULL,
    PRIMARY KEY (app_id, day, funnel_id, path)
);

-- Rewrites the funnel summary rows of one (app, cohort day) from that day's rollup_funnel_daily rows.
CREATE FUNCTION rollup_refresh_funnel_summary(p_app text, p_day date) RETURNS void
LANGUAGE sql AS $fn$
    DELETE FROM rollup_funnel_summary WHERE app_id = p_app AND day = p_day;
    INSERT INTO rollup_funnel_summary
    SELECT p_app, p_day, r.funnel_id, r.path,
           array_agg(r.step ORDER BY r.step), array_agg(r.step_name ORDER BY r.step),
           array_agg(r.devices ORDER BY r.step),
           array_agg(coalesce(CASE WHEN r.step > 1 THEN round(r.devices::numeric / nullif(r.devices_previous, 0), 6)::text END, '')
                     ORDER BY r.step),
           array_agg(coalesce(round(r.devices::numeric / nullif(r.devices_first, 0), 6)::text, '') ORDER BY r.step),
           array_agg(coalesce(trim_scale(extract(epoch FROM r.median_from_previous))::text, '') ORDER BY r.step)
    FROM rollup_funnel_daily r
    WHERE r.app_id = p_app AND r.day = p_day
    GROUP BY r.funnel_id, r.path;
$fn$;

-- Cohort actions per install day, link and name over all event days (rollup_cohort_events_daily
-- summed over day), kept by delta in rollup_refresh_day.
CREATE TABLE rollup_cohort_events_total (
    app_id text NOT NULL,
    install_day date NOT NULL,
    path text NOT NULL,
    name text NOT NULL,
    events integer NOT NULL,
    PRIMARY KEY (app_id, install_day, path, name)
);
-- Cohort revenue of one (install day, link) without reading the install day's other links.
CREATE INDEX rollup_cohort_revenue_daily_install_path ON rollup_cohort_revenue_daily (app_id, install_day, path);

-- The attribution report per (app, day, link): matched and attributed installs and last-touch opens
-- of the day (rollup_link_daily), the actions and revenue of attributed devices that day by name and
-- currency (activity: rollup_link_events_daily kind 'event', rollup_link_revenue_daily) and of the
-- devices installed that day, over all event days (cohort: rollup_cohort_events_total,
-- rollup_cohort_revenue_daily). Names and currencies sorted; amounts numeric as text. A row exists
-- when report_attribution has one (some number is non-zero).
CREATE TABLE rollup_attribution_summary (
    app_id text NOT NULL,
    day date NOT NULL,
    path text NOT NULL,
    matched_installs integer NOT NULL,
    attributed_installs integer NOT NULL,
    last_touch_opens integer NOT NULL,
    activity_actions integer NOT NULL,
    activity_names text[] NOT NULL,
    activity_counts integer[] NOT NULL,
    activity_currencies text[] NOT NULL,
    activity_amounts text[] NOT NULL,
    cohort_actions integer NOT NULL,
    cohort_names text[] NOT NULL,
    cohort_counts integer[] NOT NULL,
    cohort_currencies text[] NOT NULL,
    cohort_amounts text[] NOT NULL,
    PRIMARY KEY (app_id, day, path)
);

-- Rewrites the attribution summary rows of the (day, link) pairs in pg_temp.rollup_work_attribution
-- (app p_app) from the rollups.
CREATE FUNCTION rollup_refresh_attribution_summary(p_app text) RETURNS void
LANGUAGE plpgsql AS $fn$
BEGIN
    DELETE FROM rollup_attribution_summary s USING pg_temp.rollup_work_attribution w
    WHERE s.app_id = p_app AND s.day = w.day AND s.path = w.path;
    INSERT INTO rollup_attribution_summary
    SELECT p_app, w.day, w.path, coalesce(l.matched_installs, 0), coalesce(l.attributed_installs, 0),
           coalesce(l.last_touch_opens, 0),
           coalesce(a.actions, 0), coalesce(a.names, '{}'), coalesce(a.counts, '{}'),
           coalesce(ar.currencies, '{}'), coalesce(ar.amounts, '{}'),
           coalesce(c.actions, 0), coalesce(c.names, '{}'), coalesce(c.counts, '{}'),
           coalesce(cr.currencies, '{}'), coalesce(cr.amounts, '{}')
    FROM (SELECT DISTINCT day, path FROM pg_temp.rollup_work_attribution) w
    LEFT JOIN rollup_link_daily l ON l.app_id = p_app AND l.day = w.day AND l.path = w.path
    LEFT JOIN LATERAL (
        SELECT sum(e.events)::int AS actions, array_agg(e.name ORDER BY e.name) AS names,
               array_agg(e.events ORDER BY e.name) AS counts
        FROM rollup_link_events_daily e
        WHERE e.app_id = p_app AND e.day = w.day AND e.path = w.path AND e.kind = 'event') a ON true
    LEFT JOIN LATERAL (
        SELECT array_agg(r.currency ORDER BY r.currency) AS currencies, array_agg(r.revenue::text ORDER BY r.currency) AS amounts
        FROM rollup_link_revenue_daily r WHERE r.app_id = p_app AND r.day = w.day AND r.path = w.path) ar ON true
    LEFT JOIN LATERAL (
        SELECT sum(t.events)::int AS actions, array_agg(t.name ORDER BY t.name) AS names,
               array_agg(t.events ORDER BY t.name) AS counts
        FROM rollup_cohort_events_total t WHERE t.app_id = p_app AND t.install_day = w.day AND t.path = w.path) c ON true
    LEFT JOIN LATERAL (
        SELECT array_agg(x.currency ORDER BY x.currency) AS currencies, array_agg(x.revenue::text ORDER BY x.currency) AS amounts
        FROM (SELECT r.currency, sum(r.revenue) AS revenue FROM rollup_cohort_revenue_daily r
              WHERE r.app_id = p_app AND r.install_day = w.day AND r.path = w.path GROUP BY r.currency) x) cr ON true
    WHERE coalesce(l.matched_installs, 0) + coalesce(l.attributed_installs, 0) + coalesce(l.last_touch_opens, 0)
          + coalesce(a.actions, 0) + coalesce(c.actions, 0) > 0;
END
$fn$;

-- Before a day's rollups are recomputed: its cohort rows leave rollup_cohort_events_total, and the
-- (day, link) pairs whose attribution summary may change are noted: the day's own links (old and
-- new) and the (install day, link) pairs of its old cohort rows.
CREATE FUNCTION rollup_attribution_before(p_app text, p_day date) RETURNS void
LANGUAGE plpgsql AS $fn$
BEGIN
    IF to_regclass('pg_temp.rollup_work_attribution') IS NULL THEN
        CREATE TEMP TABLE rollup_work_attribution (day date NOT NULL, path text NOT NULL) ON COMMIT DELETE ROWS;
    END IF;
    TRUNCATE pg_temp.rollup_work_attribution;
    INSERT INTO pg_temp.rollup_work_attribution
    SELECT p_day, s.path FROM rollup_attribution_summary s WHERE s.app_id = p_app AND s.day = p_day
    UNION
    SELECT c.install_day, c.path FROM rollup_cohort_events_daily c WHERE c.app_id = p_app AND c.day = p_day;
    UPDATE rollup_cohort_events_total t SET events = t.events - o.events
    FROM (SELECT c.install_day, c.path, c.name, sum(c.events) AS events FROM rollup_cohort_events_daily c
          WHERE c.app_id = p_app AND c.day = p_day GROUP BY c.install_day, c.path, c.name) o
    WHERE t.app_id = p_app AND t.install_day = o.install_day AND t.path = o.path AND t.name = o.name;
END
$fn$;

-- After: the day's new cohort rows join the totals, and the noted pairs plus the day's new links and
-- new cohort pairs get their summary rows rewritten.
CREATE FUNCTION rollup_attribution_after(p_app text, p_day date) RETURNS void
LANGUAGE plpgsql AS $fn$
BEGIN
    INSERT INTO rollup_cohort_events_total AS t (app_id, install_day, path, name, events)
    SELECT p_app, c.install_day, c.path, c.name, sum(c.events) FROM rollup_cohort_events_daily c
    WHERE c.app_id = p_app AND c.day = p_day GROUP BY c.install_day, c.path, c.name
    ON CONFLICT (app_id, install_day, path, name) DO UPDATE SET events = t.events + EXCLUDED.events;
    INSERT INTO pg_temp.rollup_work_attribution
    SELECT p_day, r.path FROM rollup_link_daily r WHERE r.app_id = p_app AND r.day = p_day
    UNION
    SELECT p_day, r.path FROM rollup_link_events_daily r WHERE r.app_id = p_app AND r.day = p_day AND r.kind = 'event'
    UNION
    SELECT c.install_day, c.path FROM rollup_cohort_events_daily c WHERE c.app_id = p_app AND c.day = p_day;
    DELETE FROM rollup_cohort_events_total t USING (SELECT DISTINCT day, path FROM pg_temp.rollup_work_attribution) w
    WHERE t.app_id = p_app AND t.install_day = w.day AND t.path = w.path AND t.events = 0;
    PERFORM rollup_refresh_attribution_summary(p_app);
END
$fn$;

-- Retention per (app, install day, link): report_retention's grouped sums before the "reached" rule.
CREATE TABLE rollup_retention_summary (
    app_id text NOT NULL,
    install_day date NOT NULL,
    path text NOT NULL,
    cohort_size integer NOT NULL,
    d1 integer NOT NULL,
    d3 integer NOT NULL,
    d7 integer NOT NULL,
    d14 integer NOT NULL,
    d30 integer NOT NULL,
    PRIMARY KEY (app_id, install_day, path)
);

-- Rewrites the retention summary rows of the given install days of one app.
CREATE FUNCTION rollup_refresh_retention_summary(p_app text, p_days date[]) RETURNS void
LANGUAGE sql AS $fn$
    DELETE FROM rollup_retention_summary WHERE app_id = p_app AND install_day = ANY (p_days);
    INSERT INTO rollup_retention_summary
    SELECT p_app, u.install_day, u.path, sum(u.size), sum(u.d1), sum(u.d3), sum(u.d7), sum(u.d14), sum(u.d30)
    FROM (
        SELECT i.day AS install_day, i.path, i.installs AS size, 0 AS d1, 0 AS d3, 0 AS d7, 0 AS d14, 0 AS d30
        FROM rollup_installs_daily i WHERE i.app_id = p_app AND i.day = ANY (p_days)
        UNION ALL
        SELECT t.install_day, t.path, 0,
               CASE WHEN t.day - t.install_day = 1 THEN t.returned ELSE 0 END,
               CASE WHEN t.day - t.install_day = 3 THEN t.returned ELSE 0 END,
               CASE WHEN t.day - t.install_day = 7 THEN t.returned ELSE 0 END,
               CASE WHEN t.day - t.install_day = 14 THEN t.returned ELSE 0 END,
               CASE WHEN t.day - t.install_day = 30 THEN t.returned ELSE 0 END
        FROM rollup_retention_daily t WHERE t.app_id = p_app AND t.install_day = ANY (p_days)
    ) u
    GROUP BY u.install_day, u.path
    HAVING sum(u.size) > 0;
$fn$;

-- The day's rollups as 053 computes them, then the summary rows it changes (attribution, links,
-- funnels, retention). Callers (rollup_apply_work,
-- rebuild_rollups) keep calling rollup_refresh_day.
ALTER FUNCTION rollup_refresh_day(text, date) RENAME TO rollup_refresh_day_rollups;
CREATE FUNCTION rollup_refresh_day(p_app text, p_day date) RETURNS void
LANGUAGE plpgsql AS $fn$
BEGIN
    PERFORM rollup_attribution_before(p_app, p_day);
    PERFORM rollup_refresh_day_rollups(p_app, p_day);
    PERFORM rollup_attribution_after(p_app, p_day);
    PERFORM rollup_refresh_link_summary(p_app, p_day);
    PERFORM rollup_refresh_funnel_summary(p_app, p_day);
    PERFORM rollup_refresh_retention_summary(
        p_app, ARRAY[p_day, p_day - 1, p_day - 3, p_day - 7, p_day - 14, p_day - 30]);
END
$fn$;

-- Existing data: derive the summary of every day the link rollups hold (no rebuild needed).
-- Builds every summary from the rollups at once (set-based per app and day, not by delta): the
-- backfill of this migration and the end of rebuild_rollups. Equal to what the per-day refreshes
-- maintain (the incremental-vs-rebuild test compares them).
CREATE FUNCTION rollup_build_summaries() RETURNS void
LANGUAGE plpgsql AS $fn$
DECLARE
    k record;
BEGIN
    DELETE FROM rollup_link_summary;
    DELETE FROM rollup_funnel_summary;
    DELETE FROM rollup_cohort_events_total;
    DELETE FROM rollup_attribution_summary;
    DELETE FROM rollup_retention_summary;
    FOR k IN
        SELECT app_id, day FROM rollup_link_daily
        UNION SELECT app_id, day FROM rollup_link_events_daily
        UNION SELECT app_id, day FROM rollup_link_revenue_daily
    LOOP
        PERFORM rollup_refresh_link_summary(k.app_id, k.day);
    END LOOP;
    FOR k IN SELECT DISTINCT app_id, day FROM rollup_funnel_daily LOOP
        PERFORM rollup_refresh_funnel_summary(k.app_id, k.day);
    END LOOP;
    INSERT INTO rollup_cohort_events_total (app_id, install_day, path, name, events)
    SELECT c.app_id, c.install_day, c.path, c.name, sum(c.events) FROM rollup_cohort_events_daily c
    GROUP BY c.app_id, c.install_day, c.path, c.name;
    IF to_regclass('pg_temp.rollup_work_attribution') IS NULL THEN
        CREATE TEMP TABLE rollup_work_attribution (day date NOT NULL, path text NOT NULL) ON COMMIT DELETE ROWS;
    END IF;
    ANALYZE rollup_cohort_events_total;
    FOR k IN
        SELECT app_id FROM rollup_link_daily UNION SELECT app_id FROM rollup_link_events_daily
        UNION SELECT app_id FROM rollup_cohort_events_daily
    LOOP
        TRUNCATE pg_temp.rollup_work_attribution;
        INSERT INTO pg_temp.rollup_work_attribution
        SELECT r.day, r.path FROM rollup_link_daily r WHERE r.app_id = k.app_id
        UNION SELECT r.day, r.path FROM rollup_link_events_daily r WHERE r.app_id = k.app_id AND r.kind = 'event'
        UNION SELECT c.install_day, c.path FROM rollup_cohort_events_daily c WHERE c.app_id = k.app_id;
        PERFORM rollup_refresh_attribution_summary(k.app_id);
    END LOOP;
    FOR k IN
        SELECT x.app_id, array_agg(DISTINCT x.day) AS days
        FROM (SELECT app_id, day FROM rollup_installs_daily UNION SELECT app_id, install_day FROM rollup_retention_daily) x
        GROUP BY x.app_id
    LOOP
        PERFORM rollup_refresh_retention_summary(k.app_id, k.days);
    END LOOP;
END
$fn$;

-- Existing data: derive every summary (no rebuild needed).
SELECT rollup_build_summaries();

-- The per-link report in one read: one row per link and day (report_link_daily's rows plus the
-- link-days that only have events or revenue), with the breakdowns as arrays. UTM arrays use ''
-- for an absent parameter and for an undefined install rate.
CREATE VIEW report_link_summary AS
SELECT r.app_id, r.path, r.day, r.clicks::bigint AS clicks, r.universal_link_opens::bigint AS universal_link_opens,
       r.matched_installs::bigint AS matched_installs, r.attributed_installs::bigint AS attributed_installs,
       CASE WHEN r.clicks > 0 THEN round(r.matched_installs::numeric / r.clicks, 6) END AS install_rate,
       r.reengagements::bigint AS reengagements,
       r.clicks_ios::bigint AS clicks_ios, r.clicks_android::bigint AS clicks_android,
       r.universal_link_opens_ios::bigint AS universal_link_opens_ios,
       r.universal_link_opens_android::bigint AS universal_link_opens_android,
       r.matched_installs_ios::bigint AS matched_installs_ios,
       r.matched_installs_android::bigint AS matched_installs_android,
       r.attributed_installs_ios::bigint AS attributed_installs_ios,
       r.attributed_installs_android::bigint AS attributed_installs_android,
       r.reengagements_ios::bigint AS reengagements_ios, r.reengagements_android::bigint AS reengagements_android,
       r.event_names, r.event_counts, r.retention_names, r.retention_counts, r.revenue_currencies, r.revenue_amounts,
       r.utm_sources, r.utm_mediums, r.utm_campaigns, r.utm_clicks, r.utm_universal_link_opens,
       r.utm_matched_installs, r.utm_attributed_installs, r.utm_install_rates
FROM rollup_link_summary r;

-- The attribution report in one read: one row per link and day (the rows of report_attribution), with
-- the actions and revenue by name and currency, by event date (activity) and install date (cohort).
CREATE VIEW report_attribution_summary AS
SELECT r.app_id, r.path, r.day, r.matched_installs::bigint AS matched_installs,
       r.attributed_installs::bigint AS attributed_installs, r.cohort_actions::bigint AS cohort_actions,
       r.activity_actions::bigint AS activity_actions, r.last_touch_opens::bigint AS last_touch_opens,
       r.cohort_names, r.cohort_counts, r.cohort_currencies, r.cohort_amounts,
       r.activity_names, r.activity_counts, r.activity_currencies, r.activity_amounts
FROM rollup_attribution_summary r;

-- Retention in one read: report_retention's rows from the per-install-day sums (same columns, same
-- "reached" rule).
CREATE VIEW report_retention_summary AS
SELECT g.app_id, nullif(g.path, '') AS path, g.install_day AS cohort_day, g.cohort_size::bigint AS cohort_size,
       CASE WHEN g.install_day + 1 <= w.reached THEN g.d1::bigint END AS d1,
       CASE WHEN g.install_day + 3 <= w.reached THEN g.d3::bigint END AS d3,
       CASE WHEN g.install_day + 7 <= w.reached THEN g.d7::bigint END AS d7,
       CASE WHEN g.install_day + 14 <= w.reached THEN g.d14::bigint END AS d14,
       CASE WHEN g.install_day + 30 <= w.reached THEN g.d30::bigint END AS d30,
       CASE WHEN g.install_day + 1 <= w.reached THEN round(g.d1::numeric / g.cohort_size, 6) END AS d1_rate,
       CASE WHEN g.install_day + 3 <= w.reached THEN round(g.d3::numeric / g.cohort_size, 6) END AS d3_rate,
       CASE WHEN g.install_day + 7 <= w.reached THEN round(g.d7::numeric / g.cohort_size, 6) END AS d7_rate,
       CASE WHEN g.install_day + 14 <= w.reached THEN round(g.d14::numeric / g.cohort_size, 6) END AS d14_rate,
       CASE WHEN g.install_day + 30 <= w.reached THEN round(g.d30::numeric / g.cohort_size, 6) END AS d30_rate
FROM rollup_retention_summary g
LEFT JOIN (
    SELECT a.id AS app_id,
           (least(m.watermark, coalesce(n.newest_event_at, 'infinity')) AT TIME ZONE a.time_zone)::date AS reached
    FROM apps a
    LEFT JOIN rollup_apps n ON n.app_id = a.id
    CROSS JOIN (SELECT coalesce(max(k.newest_received_at), now()) AS watermark FROM load_checkpoints k) m
) w ON w.app_id = g.app_id;

-- The funnel report in one read: one row per funnel, link (NULL = organic) and cohort day, the
-- steps as arrays ('' = NULL in the rate and median arrays).
CREATE VIEW report_funnel_summary AS
SELECT r.app_id, r.funnel_id, d.name AS funnel_name, nullif(r.path, '') AS path, r.day, r.steps, r.step_names,
       r.devices, r.conversions_from_previous, r.conversions_overall, r.median_seconds_from_previous
FROM rollup_funnel_summary r
JOIN report_funnel_definitions d ON d.app_id = r.app_id AND d.funnel_id = r.funnel_id;

DO $grant$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'detour_analyst') THEN
        EXECUTE format('GRANT SELECT ON %I.report_link_summary TO detour_analyst', current_schema());
        EXECUTE format('GRANT SELECT ON %I.report_funnel_summary TO detour_analyst', current_schema());
        EXECUTE format('GRANT SELECT ON %I.report_attribution_summary TO detour_analyst', current_schema());
        EXECUTE format('GRANT SELECT ON %I.report_retention_summary TO detour_analyst', current_schema());
    END IF;
END
$grant$;

-- rebuild_rollups (051) with statistics for the per-day loop (the derived tables are analysed once
-- they are filled) and the summaries built once at the end (rollup_build_summaries).
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
    ANALYZE rollup_clicks;
    INSERT INTO pg_temp.rollup_work_devices (app_id, device_id, min_time, changed)
    SELECT e.app_id, e.device_id, min(e.event_time), true FROM events e GROUP BY e.app_id, e.device_id;
    PERFORM rollup_compute_states();
    INSERT INTO rollup_devices SELECT * FROM pg_temp.rollup_work_states;
    INSERT INTO rollup_funnel_entries SELECT * FROM pg_temp.rollup_work_entries;
    ANALYZE rollup_devices;
    ANALYZE rollup_funnel_entries;

    FOR k IN
        SELECT DISTINCT x.app_id, (x.at AT TIME ZONE coalesce(a.time_zone, 'UTC'))::date AS day
        FROM (
            SELECT e.app_id, e.event_time AS at FROM events e
            UNION ALL SELECT c.app_id, c.click_time FROM clicks c
            UNION ALL SELECT m.app_id, m.match_time FROM matches m
        ) x LEFT JOIN apps a ON a.id = x.app_id
        ORDER BY 1, 2
    LOOP
        PERFORM rollup_refresh_day_rollups(k.app_id, k.day);
    END LOOP;
    -- The summaries from the finished rollups in one pass (the per-day wrapper would rewrite the
    -- cohort summaries of every earlier install day once per day).
    ANALYZE rollup_link_daily;
    ANALYZE rollup_link_events_daily;
    ANALYZE rollup_cohort_events_daily;
    ANALYZE rollup_funnel_daily;
    PERFORM rollup_build_summaries();
END
$fn$;

-- 052_report_views: the report views analysts query (docs/reports.md documents every column with
-- an example query) and the analyst role's grants. Views read only rollups, apps and
-- load_checkpoints; '' keys of the rollups come out as NULL. Every view has app_id first: filter
-- on it (and on day) and PostgreSQL pushes the filter down to the rollups' primary keys.

-- Per link and day, with ios/android splits.
CREATE VIEW report_link_daily AS
SELECT r.app_id, r.path, r.day,
       r.clicks::bigint AS clicks, r.universal_link_opens::bigint AS universal_link_opens,
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
       r.reengagements_ios::bigint AS reengagements_ios, r.reengagements_android::bigint AS reengagements_android
FROM rollup_link_daily r
WHERE r.clicks + r.universal_link_opens + r.matched_installs + r.attributed_installs + r.reengagements > 0;

-- Events of attributed devices per link, day, kind and name.
CREATE VIEW report_link_daily_events AS
SELECT r.app_id, r.path, r.day, r.kind, r.name, r.events::bigint AS events, r.events_ios::bigint AS events_ios,
       r.events_android::bigint AS events_android
FROM rollup_link_events_daily r;

-- Revenue (purchase minus refund) of attributed devices per link, day and currency.
CREATE VIEW report_link_daily_revenue AS
SELECT r.app_id, r.path, r.day, r.currency, r.revenue, r.revenue_ios, r.revenue_android
FROM rollup_link_revenue_daily r;

-- Click-side counts per UTM breakdown (NULL = parameter absent).
CREATE VIEW report_link_daily_utm AS
SELECT r.app_id, r.path, r.day, nullif(r.utm_source, '') AS utm_source, nullif(r.utm_medium, '') AS utm_medium,
       nullif(r.utm_campaign, '') AS utm_campaign,
       r.clicks::bigint AS clicks, r.universal_link_opens::bigint AS universal_link_opens,
       r.matched_installs::bigint AS matched_installs, r.attributed_installs::bigint AS attributed_installs,
       CASE WHEN r.clicks > 0 THEN round(r.matched_installs::numeric / r.clicks, 6) END AS install_rate
FROM rollup_link_utm_daily r;

-- Installs per app and install day: attributed, organic and (among organic) unattributable.
CREATE VIEW report_installs_daily AS
SELECT r.app_id, r.day,
       sum(r.installs)::bigint AS installs,
       coalesce(sum(r.installs) FILTER (WHERE r.path <> ''), 0)::bigint AS attributed_installs,
       coalesce(sum(r.installs) FILTER (WHERE r.path = ''), 0)::bigint AS organic_installs,
       coalesce(sum(r.installs) FILTER (WHERE r.path = '' AND r.unattributable), 0)::bigint AS unattributable_installs
FROM rollup_installs_daily r
GROUP BY r.app_id, r.day;

-- Attribution per link and day: matched and attributed installs; actions of attributed devices by
-- install date (cohort_actions: everything the devices installed that day did, as loaded so far)
-- and by event date (activity_actions); last-touch opens (actions whose open_click_id is a click
-- on the link, any device).
CREATE VIEW report_attribution AS
SELECT u.app_id, u.path, u.day,
       sum(u.matched)::bigint AS matched_installs, sum(u.attributed)::bigint AS attributed_installs,
       sum(u.cohort_actions)::bigint AS cohort_actions, sum(u.activity_actions)::bigint AS activity_actions,
       sum(u.opens)::bigint AS last_touch_opens
FROM (
    SELECT r.app_id, r.path, r.day, r.matched_installs AS matched, r.attributed_installs AS attributed,
           0 AS cohort_actions, 0 AS activity_actions, r.last_touch_opens AS opens
    FROM rollup_link_daily r
    UNION ALL
    SELECT e.app_id, e.path, e.day, 0, 0, 0, e.events, 0 FROM rollup_link_events_daily e WHERE e.kind = 'event'
    UNION ALL
    SELECT c.app_id, c.path, c.install_day, 0, 0, c.events, 0, 0 FROM rollup_cohort_events_daily c
) u
GROUP BY u.app_id, u.path, u.day
HAVING sum(u.matched + u.attributed + u.cohort_actions + u.activity_actions + u.opens) > 0;

-- Actions of attributed devices per name, by install date (basis 'install_date') and by event date
-- (basis 'event_date').
CREATE VIEW report_attribution_events AS
SELECT c.app_id, c.path, c.install_day AS day, 'install_date'::text AS basis, c.name, sum(c.events)::bigint AS events
FROM rollup_cohort_events_daily c
GROUP BY c.app_id, c.path, c.install_day, c.name
UNION ALL
SELECT e.app_id, e.path, e.day, 'event_date', e.name, e.events::bigint
FROM rollup_link_events_daily e WHERE e.kind = 'event';

-- Revenue of attributed devices per currency, by install date and by event date.
CREATE VIEW report_attribution_revenue AS
SELECT c.app_id, c.path, c.install_day AS day, 'install_date'::text AS basis, c.currency, sum(c.revenue) AS revenue
FROM rollup_cohort_revenue_daily c
GROUP BY c.app_id, c.path, c.install_day, c.currency
UNION ALL
SELECT r.app_id, r.path, r.day, 'event_date', r.currency, r.revenue
FROM rollup_link_revenue_daily r;

-- Funnel definitions: the default link funnel of every app plus the app-defined ones.
CREATE VIEW report_funnel_definitions AS
SELECT a.id AS app_id, 'default'::text AS funnel_id, 'Link funnel'::text AS name,
       ARRAY['click', 'install', 'app_open', 'sign_up', 'purchase']::text[] AS steps
FROM apps a
UNION ALL
SELECT f.app_id, f.funnel_id, f.name, f.steps FROM funnels f;

-- Funnels per cohort day (day of step 1), link (NULL: organic devices of an event-first funnel) and
-- step: devices reaching the step (step 1 of a click funnel: web clicks), conversion from the
-- previous step and from step 1, median seconds from the previous step.
CREATE VIEW report_funnel AS
SELECT r.app_id, r.funnel_id, d.name AS funnel_name, nullif(r.path, '') AS path, r.day, r.step, r.step_name,
       r.devices::bigint AS devices,
       CASE WHEN r.step > 1 THEN round(r.devices::numeric / nullif(r.devices_previous, 0), 6) END
           AS conversion_from_previous,
       round(r.devices::numeric / nullif(r.devices_first, 0), 6) AS conversion_overall,
       extract(epoch FROM r.median_from_previous) AS median_seconds_from_previous
FROM rollup_funnel_daily r
JOIN report_funnel_definitions d ON d.app_id = r.app_id AND d.funnel_id = r.funnel_id;

-- The load watermark: the newest received_at the aggregator has loaded (NULL before any load).
CREATE VIEW report_watermark AS
SELECT max(c.newest_received_at) AS watermark FROM load_checkpoints c;

-- Retention per install cohort and link (NULL = organic): cohort size and devices with an app_open
-- on exactly day N, NULL while day N has not been reached: install day + N is after the app-local
-- date of the older of the load watermark (now() before any load) and the app's newest loaded
-- event time (so a history loaded late does not report zeros for days its data never reached).
CREATE VIEW report_retention AS
SELECT g.app_id, nullif(g.path, '') AS path, g.cohort_day, g.size AS cohort_size,
       CASE WHEN g.cohort_day + 1 <= w.reached THEN g.d1 END AS d1,
       CASE WHEN g.cohort_day + 3 <= w.reached THEN g.d3 END AS d3,
       CASE WHEN g.cohort_day + 7 <= w.reached THEN g.d7 END AS d7,
       CASE WHEN g.cohort_day + 14 <= w.reached THEN g.d14 END AS d14,
       CASE WHEN g.cohort_day + 30 <= w.reached THEN g.d30 END AS d30,
       CASE WHEN g.cohort_day + 1 <= w.reached THEN round(g.d1::numeric / g.size, 6) END AS d1_rate,
       CASE WHEN g.cohort_day + 3 <= w.reached THEN round(g.d3::numeric / g.size, 6) END AS d3_rate,
       CASE WHEN g.cohort_day + 7 <= w.reached THEN round(g.d7::numeric / g.size, 6) END AS d7_rate,
       CASE WHEN g.cohort_day + 14 <= w.reached THEN round(g.d14::numeric / g.size, 6) END AS d14_rate,
       CASE WHEN g.cohort_day + 30 <= w.reached THEN round(g.d30::numeric / g.size, 6) END AS d30_rate
FROM (
    SELECT u.app_id, u.path, u.cohort_day, sum(u.size)::bigint AS size, sum(u.d1)::bigint AS d1,
           sum(u.d3)::bigint AS d3, sum(u.d7)::bigint AS d7, sum(u.d14)::bigint AS d14, sum(u.d30)::bigint AS d30
    FROM (
        SELECT i.app_id, i.path, i.day AS cohort_day, i.installs AS size, 0 AS d1, 0 AS d3, 0 AS d7, 0 AS d14, 0 AS d30
        FROM rollup_installs_daily i
        UNION ALL
        SELECT t.app_id, t.path, t.install_day, 0,
               CASE WHEN t.day - t.install_day = 1 THEN t.returned ELSE 0 END,
               CASE WHEN t.day - t.install_day = 3 THEN t.returned ELSE 0 END,
               CASE WHEN t.day - t.install_day = 7 THEN t.returned ELSE 0 END,
               CASE WHEN t.day - t.install_day = 14 THEN t.returned ELSE 0 END,
               CASE WHEN t.day - t.install_day = 30 THEN t.returned ELSE 0 END
        FROM rollup_retention_daily t
    ) u
    GROUP BY u.app_id, u.path, u.cohort_day
    HAVING sum(u.size) > 0
) g
LEFT JOIN (
    -- per app: the last day reached (see above)
    SELECT a.id AS app_id,
           (least(m.watermark, coalesce(n.newest_event_at, 'infinity')) AT TIME ZONE a.time_zone)::date AS reached
    FROM apps a
    LEFT JOIN rollup_apps n ON n.app_id = a.id
    CROSS JOIN (SELECT coalesce(max(k.newest_received_at), now()) AS watermark FROM load_checkpoints k) m
) w ON w.app_id = g.app_id;

-- Rollup work queued by queue_rollups and not processed yet, per app (the daily job refuses a day
-- while its app has pending work).
CREATE VIEW report_rollups_pending AS
SELECT p.app_id, count(*)::bigint AS pending_days, min(p.day) AS oldest_day, max(p.day) AS newest_day
FROM rollup_pending_keys p
GROUP BY p.app_id;

-- The analyst role reads the report views and nothing else (no raw tables, no rollups, no writes).
DO $grant$
DECLARE
    v record;
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'detour_analyst') THEN
        RAISE WARNING 'role detour_analyst does not exist: report views not granted';
        RETURN;
    END IF;
    EXECUTE format('GRANT USAGE ON SCHEMA %I TO detour_analyst', current_schema());
    FOR v IN
        SELECT c.relname FROM pg_class c
        WHERE c.relnamespace = current_schema()::regnamespace AND c.relkind = 'v' AND c.relname LIKE 'report\_%'
    LOOP
        EXECUTE format('GRANT SELECT ON %I.%I TO detour_analyst', current_schema(), v.relname);
    END LOOP;
END
$grant$;

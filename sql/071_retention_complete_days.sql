-- 071_retention_complete_days: retention reports day N of a cohort only once day N is over.
--
-- reports.md: "Cohorts that have not reached day N report null, not 0." 052/054 took day N as
-- reached as soon as the loaded data reached into it (install day + N <= the local date of the older
-- of the load watermark and the app's newest loaded event). So day N's count was reported, as a
-- final number, while day N was still going on: the daily report for day D, run just after midnight,
-- showed cohort D's d1 (day D + 1, minutes old) as ~0, and its HTML retention curve averaged that
-- into the day-1 share; the API and the views did the same all day long.
--
-- The rule now: day N is reported once it is over in the app's time zone, i.e. the load watermark
-- (newest received_at loaded; now() before any load) is on a later local day, AND the app's loaded
-- data reaches day N (its newest event time is on day N or later), so a history loaded late (a
-- backfill, a simulated month) still reports NULL, not zeros, for days its data never reached.
-- The days of a quiet app are reported once the clock (the watermark) has passed them, whether or
-- not the app sent anything since. Same columns; CREATE OR REPLACE keeps the analyst grants.

-- Per app: the local day the load watermark is on (now() before any load) and the local day of the
-- app's newest loaded event (infinity before any): day N of a cohort is reported once
-- cohort_day + N < watermark_day and cohort_day + N <= data_day.
CREATE VIEW report_retention_reach AS
SELECT a.id AS app_id,
       (m.watermark AT TIME ZONE a.time_zone)::date AS watermark_day,
       (coalesce(n.newest_event_at, 'infinity') AT TIME ZONE a.time_zone)::date AS data_day
FROM apps a
LEFT JOIN rollup_apps n ON n.app_id = a.id
CROSS JOIN (SELECT coalesce(max(k.newest_received_at), now()) AS watermark FROM load_checkpoints k) m;

CREATE OR REPLACE VIEW report_retention AS
SELECT g.app_id, nullif(g.path, '') AS path, g.cohort_day, g.size AS cohort_size,
       CASE WHEN g.cohort_day + 1 < w.watermark_day AND g.cohort_day + 1 <= w.data_day THEN g.d1 END AS d1,
       CASE WHEN g.cohort_day + 3 < w.watermark_day AND g.cohort_day + 3 <= w.data_day THEN g.d3 END AS d3,
       CASE WHEN g.cohort_day + 7 < w.watermark_day AND g.cohort_day + 7 <= w.data_day THEN g.d7 END AS d7,
       CASE WHEN g.cohort_day + 14 < w.watermark_day AND g.cohort_day + 14 <= w.data_day THEN g.d14 END AS d14,
       CASE WHEN g.cohort_day + 30 < w.watermark_day AND g.cohort_day + 30 <= w.data_day THEN g.d30 END AS d30,
       CASE WHEN g.cohort_day + 1 < w.watermark_day AND g.cohort_day + 1 <= w.data_day THEN round(g.d1::numeric / g.size, 6) END AS d1_rate,
       CASE WHEN g.cohort_day + 3 < w.watermark_day AND g.cohort_day + 3 <= w.data_day THEN round(g.d3::numeric / g.size, 6) END AS d3_rate,
       CASE WHEN g.cohort_day + 7 < w.watermark_day AND g.cohort_day + 7 <= w.data_day THEN round(g.d7::numeric / g.size, 6) END AS d7_rate,
       CASE WHEN g.cohort_day + 14 < w.watermark_day AND g.cohort_day + 14 <= w.data_day THEN round(g.d14::numeric / g.size, 6) END AS d14_rate,
       CASE WHEN g.cohort_day + 30 < w.watermark_day AND g.cohort_day + 30 <= w.data_day THEN round(g.d30::numeric / g.size, 6) END AS d30_rate
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
LEFT JOIN report_retention_reach w ON w.app_id = g.app_id;

CREATE OR REPLACE VIEW report_retention_summary AS
SELECT g.app_id, nullif(g.path, '') AS path, g.install_day AS cohort_day, g.cohort_size::bigint AS cohort_size,
       CASE WHEN g.install_day + 1 < w.watermark_day AND g.install_day + 1 <= w.data_day THEN g.d1::bigint END AS d1,
       CASE WHEN g.install_day + 3 < w.watermark_day AND g.install_day + 3 <= w.data_day THEN g.d3::bigint END AS d3,
       CASE WHEN g.install_day + 7 < w.watermark_day AND g.install_day + 7 <= w.data_day THEN g.d7::bigint END AS d7,
       CASE WHEN g.install_day + 14 < w.watermark_day AND g.install_day + 14 <= w.data_day THEN g.d14::bigint END AS d14,
       CASE WHEN g.install_day + 30 < w.watermark_day AND g.install_day + 30 <= w.data_day THEN g.d30::bigint END AS d30,
       CASE WHEN g.install_day + 1 < w.watermark_day AND g.install_day + 1 <= w.data_day THEN round(g.d1::numeric / g.cohort_size, 6) END AS d1_rate,
       CASE WHEN g.install_day + 3 < w.watermark_day AND g.install_day + 3 <= w.data_day THEN round(g.d3::numeric / g.cohort_size, 6) END AS d3_rate,
       CASE WHEN g.install_day + 7 < w.watermark_day AND g.install_day + 7 <= w.data_day THEN round(g.d7::numeric / g.cohort_size, 6) END AS d7_rate,
       CASE WHEN g.install_day + 14 < w.watermark_day AND g.install_day + 14 <= w.data_day THEN round(g.d14::numeric / g.cohort_size, 6) END AS d14_rate,
       CASE WHEN g.install_day + 30 < w.watermark_day AND g.install_day + 30 <= w.data_day THEN round(g.d30::numeric / g.cohort_size, 6) END AS d30_rate
FROM rollup_retention_summary g
LEFT JOIN report_retention_reach w ON w.app_id = g.app_id;

DO $grant$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'detour_analyst') THEN
        EXECUTE format('GRANT SELECT ON %I.report_retention_reach TO detour_analyst', current_schema());
    END IF;
END
$grant$;

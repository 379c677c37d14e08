-- 056_rollup_load_clicks_join: rollup_load_clicks lets the planner choose how to find the clicks.
--
-- 051 probed `clicks` once per work click (a LATERAL lookup with LIMIT 1, pruned at run time to the
-- click's day partition). That is right for a load cycle's few hundred clicks, but a rebuild puts
-- every click in the work table: at 1M raw rows that was 70k probes over 64 partitions, 13 s of a
-- 60 s rebuild_rollups(), and about ten times that at 10M. The lookup is now a plain join after an
-- ANALYZE of the (temporary, per-session) work table, so the planner knows its size: a
-- parameterized nested loop (the same run-time-pruned probes) for a cycle's handful of clicks, a
-- hash join over the partitions for a rebuild. The result is the same row for row: each work key
-- (app, click id, click time) names at most one click, and DISTINCT ON keeps the earliest per id.

CREATE OR REPLACE FUNCTION rollup_load_clicks() RETURNS void
LANGUAGE plpgsql AS $fn$
BEGIN
    ANALYZE pg_temp.rollup_work_clicks;
    INSERT INTO rollup_clicks AS r (app_id, click_id, click_time, click_day, path, platform, click_kind,
                                    utm_source, utm_medium, utm_campaign)
    SELECT DISTINCT ON (w.app_id, w.click_id) w.app_id, w.click_id, c.click_time,
           (c.click_time AT TIME ZONE s.time_zone)::date, c.path, coalesce(c.platform, ''), c.click_kind,
           coalesce(c.utm_source, ''), coalesce(c.utm_medium, ''), coalesce(c.utm_campaign, '')
    FROM pg_temp.rollup_work_clicks w
    JOIN clicks c ON c.app_id = w.app_id AND c.click_id = w.click_id AND c.click_time = w.click_time
    CROSS JOIN LATERAL rollup_settings(w.app_id) s
    ORDER BY w.app_id, w.click_id, c.click_time
    ON CONFLICT (app_id, click_id) DO UPDATE SET
        click_time = EXCLUDED.click_time, click_day = EXCLUDED.click_day, path = EXCLUDED.path,
        platform = EXCLUDED.platform, click_kind = EXCLUDED.click_kind, utm_source = EXCLUDED.utm_source,
        utm_medium = EXCLUDED.utm_medium, utm_campaign = EXCLUDED.utm_campaign
    WHERE EXCLUDED.click_time <= r.click_time;
END
$fn$;

-- 074_rebuild_analyze_as_owner: a rebuild analyses the tables it has just filled through
-- rollup_analyze, so it gets fresh statistics whoever runs it.
--
-- 072 made the rollup pass analyse through rollup_analyze(regclass) (SECURITY DEFINER, owned by the
-- schema's owner), but rebuild_rollups_all and rollup_build_summaries (054's bodies; 061 renamed
-- 054's rebuild_rollups to rebuild_rollups_all) still ran ANALYZE themselves. Run by the runtime
-- role (`report rebuild` or `SELECT rebuild_rollups()` as detour_writer), each of those eight
-- ANALYZEs was skipped with "WARNING: skipping ... only table or database owner can analyze it",
-- and the per-day loop and the summaries were planned against the statistics of the tables the
-- rebuild had just emptied (why 054 added them: rollup_devices probed through the install-day index
-- once per event). The same two functions with each ANALYZE of a real table through rollup_analyze;
-- nothing else changes. ANALYZE of a pg_temp table (rollup_compute_states, rollup_load_clicks)
-- stays direct: the caller owns its temporary tables.
--
-- CREATE OR REPLACE keeps the functions' owner and privileges and resets the SET clause:
-- rebuild_rollups_all repeats 070's TimeZone = 'UTC' (IncrementalTests.sessionTimeZone). A later
-- migration that replaces either keeps calling rollup_analyze (DeploymentFilesTests
-- .rolesOnAFreshDatabase checks that `report rebuild` as the runtime role analyses those tables).

-- 054's rollup_build_summaries, analysing rollup_cohort_events_total through rollup_analyze.
CREATE OR REPLACE FUNCTION rollup_build_summaries() RETURNS void
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
    PERFORM rollup_analyze('rollup_cohort_events_total');
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

-- 054's rebuild_rollups (061: rebuild_rollups_all, 070: in UTC), analysing through rollup_analyze.
CREATE OR REPLACE FUNCTION rebuild_rollups_all()
RETURNS void
LANGUAGE plpgsql SET TimeZone = 'UTC' AS $fn$
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
    PERFORM rollup_analyze('rollup_clicks');
    INSERT INTO pg_temp.rollup_work_devices (app_id, device_id, min_time, changed)
    SELECT e.app_id, e.device_id, min(e.event_time), true FROM events e GROUP BY e.app_id, e.device_id;
    PERFORM rollup_compute_states();
    INSERT INTO rollup_devices SELECT * FROM pg_temp.rollup_work_states;
    INSERT INTO rollup_funnel_entries SELECT * FROM pg_temp.rollup_work_entries;
    PERFORM rollup_analyze('rollup_devices');
    PERFORM rollup_analyze('rollup_funnel_entries');

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
    PERFORM rollup_analyze('rollup_link_daily');
    PERFORM rollup_analyze('rollup_link_events_daily');
    PERFORM rollup_analyze('rollup_cohort_events_daily');
    PERFORM rollup_analyze('rollup_funnel_daily');
    PERFORM rollup_build_summaries();
END
$fn$;

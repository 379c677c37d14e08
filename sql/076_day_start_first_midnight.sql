-- 076_day_start_first_midnight: a local day starts at its first midnight.
--
-- report_day_start (050) turned local midnight into an instant with `p_day::timestamp AT TIME ZONE
-- tz`. Where clocks fall back across midnight (Atlantic/Azores on the last Sunday of October: 01:00
-- becomes 00:00; America/Havana in November), midnight happens twice and PostgreSQL takes the
-- later one: the day began an hour late, and its first hour counted for the day before. Everything
-- else dates an instant by its local calendar date (`(t AT TIME ZONE tz)::date`: a device's install
-- day, a click's day, the keys a load queues), so the two rules disagreed for that hour: a click at
-- 00:30 on the first pass through it was queued for the 25th, whose refresh (from 01:00) left it
-- out, and the 24th, whose refresh would have counted it, was not queued; a rebuild counted it on
-- the 24th. Found by reading the SQL (forty-first session); IncrementalTests.midnightFallsBack.
--
-- Now the day starts at the earlier of PostgreSQL's midnight and the instant right after the
-- previous day's last microsecond: the first midnight where midnight repeats, PostgreSQL's where it
-- does not exist (clocks spring forward at midnight: the day starts at 01:00) or where the hour
-- before it repeats (24:00 back to 23:00), and the same instant everywhere else.
CREATE OR REPLACE FUNCTION report_day_start(p_day date, p_time_zone text) RETURNS timestamptz
LANGUAGE sql STABLE PARALLEL SAFE AS $fn$
    SELECT least(p_day::timestamp AT TIME ZONE p_time_zone,
                 ((p_day::timestamp - interval '1 microsecond') AT TIME ZONE p_time_zone) + interval '1 microsecond')
$fn$;

-- The rollups of the days whose start moved, and of the day before each (whose end moved), are
-- recomputed by the next rollup pass: queued for every app over the UTC days it has events on
-- (rollup_events_daily, one index range per app), one day either side.
INSERT INTO rollup_pending_keys (app_id, day)
SELECT DISTINCT a.id, k.day
FROM apps a
CROSS JOIN LATERAL (
    SELECT min(e.day) - 1 AS first_day, max(e.day) + 1 AS last_day FROM rollup_events_daily e WHERE e.app_id = a.id
) r
CROSS JOIN LATERAL generate_series(r.first_day, r.last_day, interval '1 day') AS g(d)
CROSS JOIN LATERAL (VALUES (g.d::date), (g.d::date - 1)) AS k(day)
WHERE r.first_day IS NOT NULL
  AND g.d::date::timestamp AT TIME ZONE coalesce(a.time_zone, 'UTC')
      <> report_day_start(g.d::date, coalesce(a.time_zone, 'UTC'))
ON CONFLICT DO NOTHING;

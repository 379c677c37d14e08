-- 070_rollups_in_utc: the rollup functions compute in UTC whatever the caller's session TimeZone.
--
-- The aggregator's connections run with TimeZone UTC (Postgres.Connection sets it), but operators
-- are told to run `SELECT rebuild_rollups();` (docs/reports.md), typically from psql, whose session
-- TimeZone is the server's default (postgresql.conf, from the host's zone at initdb). Two pieces of
-- the rollups added an interval to a timestamptz, which PostgreSQL does in the session's zone:
--   * the funnel's deadline, step 1's time + conversion_window (rollup_refresh_day_rollups), and
--     the funnel cohorts a late event can still reach (rollup_apply_work): across a DST change of
--     the session's zone "7 days" were 167 or 169 hours. A device whose sign-up came 167.5 h after
--     its click converted in the aggregator's numbers and not after a rebuild from a Europe/Berlin
--     session (reports.md: "a report recomputed from scratch must always equal the incrementally
--     maintained one");
--   * refresh_rollups / queue_rollups without the aggregator's staging table take every row of the
--     given UTC days as touched, from midnight UTC to midnight + 1 day: a 23-hour "day" in such a
--     session, which missed the last hour's rows (rollup_events_daily's UTC days alike).
-- Every day boundary was already session-independent (AT TIME ZONE the app's zone), and the
-- install lookback and re-engagement inactivity compare differences of two instants (absolute).
--
-- Fix: the entry points (and the per-day functions that do the arithmetic, which tests and
-- benchmarks call directly) run with TimeZone UTC, restored when they return (a function's SET
-- clause; the nested calls inherit it). The numbers the aggregator produced are unchanged: its
-- sessions were UTC already. All windows are therefore exact durations (7 days = 168 hours).
-- A later migration that replaces one of these functions with CREATE OR REPLACE must repeat the
-- clause (CREATE OR REPLACE resets it): IncrementalTests.sessionTimeZone fails otherwise.
ALTER FUNCTION refresh_rollups(text[], date[]) SET TimeZone = 'UTC';
ALTER FUNCTION queue_rollups(text[], date[]) SET TimeZone = 'UTC';
ALTER FUNCTION process_rollups() SET TimeZone = 'UTC';
ALTER FUNCTION process_rollups_queued() SET TimeZone = 'UTC';
ALTER FUNCTION rebuild_rollups() SET TimeZone = 'UTC';
ALTER FUNCTION rebuild_rollups_all() SET TimeZone = 'UTC';
ALTER FUNCTION rollup_apply_work() SET TimeZone = 'UTC';
ALTER FUNCTION rollup_refresh_day(text, date) SET TimeZone = 'UTC';
ALTER FUNCTION rollup_refresh_day_rollups(text, date) SET TimeZone = 'UTC';
ALTER FUNCTION rollup_refresh_events_daily(text[], date[]) SET TimeZone = 'UTC';

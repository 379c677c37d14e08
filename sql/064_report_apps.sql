-- Each app's reporting settings, readable by the analyst role (which cannot read `apps`), with
-- `today`: the current day in the app's time zone, where a report range without an end ends
-- (`report links` without --to, GET /api/reports/* without to; docs/reports.md, "Conventions").
-- Until this migration that default was today in UTC, which for an app east of UTC left out its
-- current local day for part of every day (for Asia/Tokyo from 15:00 to 24:00 UTC).

CREATE VIEW report_apps AS
SELECT a.id AS app_id, a.time_zone, a.install_lookback, a.reengagement_inactivity, a.conversion_window,
       (now() AT TIME ZONE a.time_zone)::date AS today
FROM apps a;

DO $grant$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'detour_analyst') THEN
        EXECUTE format('GRANT SELECT ON %I.report_apps TO detour_analyst', current_schema());
    END IF;
END
$grant$;

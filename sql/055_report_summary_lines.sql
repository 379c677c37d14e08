-- 055_report_summary_lines: the per-link, attribution and funnel summaries (054) keep their packed
-- text form, written when the row is written, so reading a report is a plain scan.
--
-- ReportService reads each summary row as one text column `line` (the scalar columns and the
-- breakdown arrays back to back, decoded by ReportPacked). Until now the read built that line in its
-- SELECT, and PostgreSQL's text output of ~14 arrays per row was most of the query: at 10M raw rows,
-- 30 days and 1,000 links the per-link read took ~150 ms of ~255 ms, against ~25 ms for a scan of the
-- same rows without the array output. Each summary row now carries its line in a column `line`, set
-- by a BEFORE INSERT OR UPDATE trigger from the row's own columns: every writer of the summaries
-- (rollup_refresh_link_summary, rollup_refresh_funnel_summary, rollup_refresh_attribution_summary,
-- and so rollup_refresh_day, rollup_build_summaries and rebuild_rollups) gets it without a change, and
-- a line can never disagree with its row. The cost moves to the refresh: one concat per row written,
-- proportional to the rows a refresh writes (~1,000 per link-day), not to the table.
--
-- The line formats (ReportSQL documents them for the reader). A text field written "counted" is its
-- length in bytes, a comma and the text (any bytes: paths may hold commas, quotes, newlines).
-- - link: the path (counted); the day (YYYY-MM-DD), the 15 counts of rollup_link_summary in the
--   order clicks, universal_link_opens, matched_installs, attributed_installs, reengagements, then
--   those five _ios and _android, the install rate as report_link_summary prints it ('' when NULL),
--   each followed by a comma; then the 14 arrays event_names ... utm_install_rates in PostgreSQL's
--   array output, back to back, ending the line.
-- - attribution: the path (counted); day, matched_installs, attributed_installs, cohort_actions,
--   activity_actions, last_touch_opens, each followed by a comma; the arrays cohort_names,
--   cohort_counts, cohort_currencies, cohort_amounts, activity_names, activity_counts,
--   activity_currencies, activity_amounts.
--   The path comes first so the reader can order the rows by (path, day) before decoding them.
-- - funnel: day and a comma; the arrays steps, step_names, devices, conversions_from_previous,
--   conversions_overall, median_seconds_from_previous; '-' for the organic "link" ('' path) or '+'
--   and the path (the rest of the line). The funnel's id and name are not stored:
--   report_funnel_summary_lines puts them first (each counted) at read time, so a renamed funnel
--   reads right.
-- Days are written with to_char, not the session's DateStyle.
--
-- The views report_link_summary_lines, report_attribution_summary_lines and
-- report_funnel_summary_lines (app_id, day, line) expose the lines to the reader roles.

ALTER TABLE rollup_link_summary ADD COLUMN line text;
ALTER TABLE rollup_attribution_summary ADD COLUMN line text;
ALTER TABLE rollup_funnel_summary ADD COLUMN line text;

-- The packed line of a rollup_link_summary row, set on every write.
CREATE FUNCTION rollup_link_summary_set_line() RETURNS trigger
LANGUAGE plpgsql AS $fn$
BEGIN
    NEW.line := concat(
        octet_length(NEW.path), ',', NEW.path, to_char(NEW.day, 'YYYY-MM-DD'), ',', NEW.clicks, ',',
        NEW.universal_link_opens, ',', NEW.matched_installs, ',', NEW.attributed_installs, ',', NEW.reengagements, ',',
        NEW.clicks_ios, ',', NEW.universal_link_opens_ios, ',',
        NEW.matched_installs_ios, ',', NEW.attributed_installs_ios, ',', NEW.reengagements_ios, ',',
        NEW.clicks_android, ',', NEW.universal_link_opens_android, ',', NEW.matched_installs_android, ',',
        NEW.attributed_installs_android, ',', NEW.reengagements_android, ',',
        CASE WHEN NEW.clicks > 0 THEN round(NEW.matched_installs::numeric / NEW.clicks, 6) END, ',',
        NEW.event_names, NEW.event_counts, NEW.retention_names, NEW.retention_counts, NEW.revenue_currencies,
        NEW.revenue_amounts, NEW.utm_sources, NEW.utm_mediums, NEW.utm_campaigns, NEW.utm_clicks,
        NEW.utm_universal_link_opens, NEW.utm_matched_installs, NEW.utm_attributed_installs, NEW.utm_install_rates);
    RETURN NEW;
END
$fn$;

-- The packed line of a rollup_attribution_summary row, set on every write.
CREATE FUNCTION rollup_attribution_summary_set_line() RETURNS trigger
LANGUAGE plpgsql AS $fn$
BEGIN
    NEW.line := concat(
        octet_length(NEW.path), ',', NEW.path, to_char(NEW.day, 'YYYY-MM-DD'), ',', NEW.matched_installs, ',',
        NEW.attributed_installs, ',',
        NEW.cohort_actions, ',', NEW.activity_actions, ',', NEW.last_touch_opens, ',',
        NEW.cohort_names, NEW.cohort_counts, NEW.cohort_currencies, NEW.cohort_amounts,
        NEW.activity_names, NEW.activity_counts, NEW.activity_currencies, NEW.activity_amounts);
    RETURN NEW;
END
$fn$;

-- The packed line of a rollup_funnel_summary row (without the funnel's id and name), set on every write.
CREATE FUNCTION rollup_funnel_summary_set_line() RETURNS trigger
LANGUAGE plpgsql AS $fn$
BEGIN
    NEW.line := concat(
        to_char(NEW.day, 'YYYY-MM-DD'), ',', NEW.steps, NEW.step_names, NEW.devices, NEW.conversions_from_previous,
        NEW.conversions_overall, NEW.median_seconds_from_previous,
        CASE WHEN NEW.path = '' THEN '-' ELSE '+' || NEW.path END);
    RETURN NEW;
END
$fn$;

CREATE TRIGGER rollup_link_summary_line BEFORE INSERT OR UPDATE ON rollup_link_summary
    FOR EACH ROW EXECUTE FUNCTION rollup_link_summary_set_line();
CREATE TRIGGER rollup_attribution_summary_line BEFORE INSERT OR UPDATE ON rollup_attribution_summary
    FOR EACH ROW EXECUTE FUNCTION rollup_attribution_summary_set_line();
CREATE TRIGGER rollup_funnel_summary_line BEFORE INSERT OR UPDATE ON rollup_funnel_summary
    FOR EACH ROW EXECUTE FUNCTION rollup_funnel_summary_set_line();

-- Existing rows: the triggers compute their lines on this update.
UPDATE rollup_link_summary SET line = NULL;
UPDATE rollup_attribution_summary SET line = NULL;
UPDATE rollup_funnel_summary SET line = NULL;
ALTER TABLE rollup_link_summary ALTER COLUMN line SET NOT NULL;
ALTER TABLE rollup_attribution_summary ALTER COLUMN line SET NOT NULL;
ALTER TABLE rollup_funnel_summary ALTER COLUMN line SET NOT NULL;

-- The lines, for ReportService (ReportSQL.linkSummary, attributionSummary, funnelSummary).
CREATE VIEW report_link_summary_lines AS
SELECT r.app_id, r.day, r.line FROM rollup_link_summary r;

CREATE VIEW report_attribution_summary_lines AS
SELECT r.app_id, r.day, r.line FROM rollup_attribution_summary r;

-- The funnel's id and name (each counted) before the stored line.
CREATE VIEW report_funnel_summary_lines AS
SELECT r.app_id, r.day,
       concat(octet_length(r.funnel_id), ',', r.funnel_id, octet_length(d.name), ',', d.name, r.line) AS line
FROM rollup_funnel_summary r
JOIN report_funnel_definitions d ON d.app_id = r.app_id AND d.funnel_id = r.funnel_id;

DO $grant$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'detour_analyst') THEN
        EXECUTE format('GRANT SELECT ON %I.report_link_summary_lines TO detour_analyst', current_schema());
        EXECUTE format('GRANT SELECT ON %I.report_attribution_summary_lines TO detour_analyst', current_schema());
        EXECUTE format('GRANT SELECT ON %I.report_funnel_summary_lines TO detour_analyst', current_schema());
    END IF;
END
$grant$;

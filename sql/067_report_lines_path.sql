-- 067_report_lines_path: the link path beside each packed summary line, so a report can be asked for
-- one link (`report links --path /promo`, `GET /api/reports/links?path=/promo`).
--
-- The lines (055) start with the path, counted, but a reader could not filter on it: each view gets
-- the path as a column at its end (CREATE OR REPLACE VIEW may only add columns there; an older
-- reader selects its columns by name). The funnel's organic "link" is NULL, as in
-- report_funnel_summary. A filter on the path uses the rollups' (app_id, day, ...) keys for the
-- range of days and checks the path in the index.

CREATE OR REPLACE VIEW report_link_summary_lines AS
SELECT r.app_id, r.day, r.line, r.platform_line, r.path FROM rollup_link_summary r;

CREATE OR REPLACE VIEW report_attribution_summary_lines AS
SELECT r.app_id, r.day, r.line, r.path FROM rollup_attribution_summary r;

CREATE OR REPLACE VIEW report_funnel_summary_lines AS
SELECT r.app_id, r.day,
       concat(octet_length(r.funnel_id), ',', r.funnel_id, octet_length(d.name), ',', d.name, r.line) AS line,
       nullif(r.path, '') AS path
FROM rollup_funnel_summary r
JOIN report_funnel_definitions d ON d.app_id = r.app_id AND d.funnel_id = r.funnel_id;

-- 077_retention_reach_every_node: retention's "day N is over" waits for every ingest node.
--
-- 071 reported day N of a cohort once the load watermark was on a later local day. The watermark is
-- the newest received_at loaded from ANY node: with several ingest nodes, one that lagged behind
-- (its aggregator cycle later, its log longer) could still hold app_opens of day N, and day N's
-- count was reported as a final number, then grew when that node's segments were loaded. The daily
-- job had the same fault and was mended in the fortieth session (ReportSQL.completeness: every
-- node's loaded_through); retention in the views and the API still used the newest node.
--
-- Now "the clock" of retention is report_watermark.loaded_through (sql/063: per node the later of
-- its newest loaded received_at and the last time a cycle read its log to its end, the earliest over
-- the nodes), else the watermark (a node with neither, before its first cycle), else now() before
-- any load. With one node this is never earlier than before (caught_up_at moves the day on for a
-- quiet app). A node whose log nobody reads any more holds the days back until its checkpoint row
-- is deleted, as for the daily job (docs/cron.md). Same columns; CREATE OR REPLACE keeps the grants.
-- Found by reading the SQL (forty-first session); LinkReportTests.retentionWaitsForEveryNode.
CREATE OR REPLACE VIEW report_retention_reach AS
SELECT a.id AS app_id,
       (m.through AT TIME ZONE a.time_zone)::date AS watermark_day,
       (coalesce(n.newest_event_at, 'infinity') AT TIME ZONE a.time_zone)::date AS data_day
FROM apps a
LEFT JOIN rollup_apps n ON n.app_id = a.id
CROSS JOIN (SELECT coalesce(w.loaded_through, w.watermark, now()) AS through FROM report_watermark w) m;

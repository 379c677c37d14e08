-- 083_watermark_rolled_up: the watermark a report states is one its numbers have reached.
--
-- report_watermark (052, 063) stated the newest received_at loaded and the time every node was
-- loaded through. A load queues the (app, day) keys it touched; the rollups the reports read take
-- them in at the next rollup pass (under `run` at most --rollup-interval, 10 s, later; under cron
-- at the end of `aggregate --once`). In between, every report (the API's, `report`, the analyst
-- views) stated a watermark that included rows its numbers did not count yet, and retention
-- (report_retention_reach, 077) reported a day as reached whose app_opens were loaded and not yet
-- rolled up: zeros, or too few, until the next pass. Known since 2026-12-04 (docs/reports.md).
--
-- Now each rollup pass, and each rebuild, records in rollup_applied what report_watermark's loads
-- stood at when it began: it runs with no load in progress (075's load lock), so everything loaded
-- by then is applied when it commits (the held apps of 079 aside, whose reports are refused). While
-- any rollup work is queued, report_watermark states that record; with nothing queued the rollups
-- count every loaded row and it states the loads' own values, as before. The loads' values stay
-- visible as loads_watermark and loads_through (how far loads are ahead of the rollups).

CREATE TABLE rollup_applied (
    only_row boolean PRIMARY KEY DEFAULT true CHECK (only_row),
    -- report_watermark's loads_watermark and loads_through when the last pass or rebuild began
    watermark timestamptz,
    loaded_through timestamptz
);

COMMENT ON TABLE rollup_applied IS
    'what the loads stood at when the last rollup pass or rebuild began: what the rollups count (083)';

-- The loads' values as 063 stated them; until the next pass (at most seconds later) the record
-- claims what the old view claimed.
INSERT INTO rollup_applied (watermark, loaded_through)
SELECT w.watermark, w.loaded_through FROM report_watermark w;

-- watermark and loaded_through: as the rollups count them (see the header); loads_watermark and
-- loads_through: 063's watermark and loaded_through, of the loads alone.
CREATE OR REPLACE VIEW report_watermark AS
WITH loads AS (
    SELECT max(c.newest_received_at) AS watermark,
           CASE WHEN bool_and(coalesce(c.newest_received_at, c.caught_up_at) IS NOT NULL)
                THEN min(greatest(c.newest_received_at, c.caught_up_at)) END AS loaded_through
    FROM load_checkpoints c
), queued AS (
    SELECT EXISTS (SELECT 1 FROM rollup_pending_keys)
        OR EXISTS (SELECT 1 FROM rollup_pending_devices)
        OR EXISTS (SELECT 1 FROM rollup_pending_clicks)
        OR EXISTS (SELECT 1 FROM rollup_pending_device_batches)
        OR EXISTS (SELECT 1 FROM rollup_pending_click_batches) AS any
)
SELECT CASE WHEN q.any THEN a.watermark ELSE l.watermark END AS watermark,
       CASE WHEN q.any THEN a.loaded_through ELSE l.loaded_through END AS loaded_through,
       l.watermark AS loads_watermark,
       l.loaded_through AS loads_through
FROM loads l CROSS JOIN queued q LEFT JOIN rollup_applied a ON true;

-- Takes the load lock (075) and records what the loads stand at: called first by a pass and a
-- rebuild, in their transaction. The lock waits for a load in progress; the statement after it
-- reads a fresh snapshot, so every load committed before the lock is counted.
CREATE FUNCTION rollup_lock_and_record_applied()
RETURNS void
LANGUAGE plpgsql AS $fn$
BEGIN
    PERFORM pg_advisory_xact_lock(1684370546, hashtext(current_schema()));
    UPDATE rollup_applied a SET watermark = w.loads_watermark, loaded_through = w.loads_through
    FROM report_watermark w;
END
$fn$;

-- 075's process_rollups() and rebuild_rollups(), recording what they apply.
CREATE OR REPLACE FUNCTION process_rollups()
RETURNS integer
LANGUAGE plpgsql AS $fn$
BEGIN
    PERFORM rollup_lock_and_record_applied();
    RETURN process_rollups_locked();
END
$fn$;
ALTER FUNCTION process_rollups() SET TimeZone = 'UTC';

CREATE OR REPLACE FUNCTION rebuild_rollups()
RETURNS void
LANGUAGE plpgsql AS $fn$
BEGIN
    PERFORM rollup_lock_and_record_applied();
    PERFORM rebuild_rollups_locked();
END
$fn$;
ALTER FUNCTION rebuild_rollups() SET TimeZone = 'UTC';

-- The pipeline role updates the record in its passes (072's grants cover rollup_* tables made
-- before them; this one is new). A warning, and nothing granted, while the role is missing.
SELECT grant_writer_privileges();

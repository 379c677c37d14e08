-- When the aggregator last found each node's log at its end, so the daily job can tell a quiet
-- day is completely loaded (docs/cron.md, "When is a day complete?").
--
-- The newest loaded received_at only moves when something new arrives: after a quiet night (no
-- event received after the end of day D plus the grace period) it stayed short of what `report
-- daily` required and the job refused the day (exit 75) until the next event, however long that
-- was, although everything had been loaded. caught_up_at is the aggregator's clock when it began
-- the read of a cycle that reached the end of the node's log (set by every such cycle, idle ones
-- included, never moved back): every envelope the node had made durable by then is loaded.

ALTER TABLE load_checkpoints ADD COLUMN caught_up_at timestamptz;

COMMENT ON COLUMN load_checkpoints.caught_up_at IS
    'when a load cycle that read this node''s log to its end began reading it (aggregator clock)';

-- watermark: as in 052 (the newest received_at loaded; what every report states).
-- loaded_through: every node's log is loaded up to at least this instant: per node the later of
-- its newest loaded received_at and caught_up_at, the earliest over the nodes (NULL while some
-- node has neither).
CREATE OR REPLACE VIEW report_watermark AS
SELECT max(c.newest_received_at) AS watermark,
       CASE WHEN bool_and(coalesce(c.newest_received_at, c.caught_up_at) IS NOT NULL)
            THEN min(greatest(c.newest_received_at, c.caught_up_at)) END AS loaded_through
FROM load_checkpoints c;

-- 061_rollup_pending_device_batches: the load cycle queues its touched devices (and its clicks)
-- as ONE row each.
--
-- 060's queue_rollups_touched() upserted one row per touched device into rollup_pending_devices
-- (051) inside the load transaction: a heap tuple and a primary-key insertion (or a conflict check)
-- per device, 100-150 ms of each 50,000-event cycle in the loader benchmark (18,000 of its 20,000
-- devices touched per cycle), about a tenth of the load transaction's server time; the clicks
-- (3,000 per cycle into rollup_pending_clicks) about 20 ms more. Now the cycle appends one row
-- holding the devices as parallel arrays (rollup_pending_device_batches) and one holding the
-- clicks (rollup_pending_click_batches), and process_rollups() folds the batches into
-- rollup_pending_devices and rollup_pending_clicks first, in its own transaction (outside the
-- load), under the rollup lock. The work queued is the same: process_rollups (051) already groups
-- its pending devices by (app, device) with the earliest min_time, and its clicks DISTINCT.
--
-- Atomicity is unchanged: the batch row commits with the rows that caused it. A batch committed
-- while a pass runs is not seen by the pass's DELETE and waits for the next pass (as a pending
-- device row inserted then did).
--
-- Contract for later migrations: a replacement of process_rollups_queued() (051's process_rollups,
-- renamed here) keeps its meaning; a migration that replaces process_rollups() itself must fold
-- the batches first (rollup_fold_device_batches()), or the queued devices and clicks wait forever.

CREATE TABLE rollup_pending_device_batches (
    app_ids text[] NOT NULL, device_ids text[] NOT NULL, min_times timestamptz[] NOT NULL);
-- The cycle's new clicks, the same way (folded into rollup_pending_clicks).
CREATE TABLE rollup_pending_click_batches (
    app_ids text[] NOT NULL, click_ids text[] NOT NULL, click_times timestamptz[] NOT NULL);
-- Written once and deleted by the next pass: no compression work inside the load transaction.
ALTER TABLE rollup_pending_device_batches
    ALTER COLUMN app_ids SET STORAGE EXTERNAL,
    ALTER COLUMN device_ids SET STORAGE EXTERNAL,
    ALTER COLUMN min_times SET STORAGE EXTERNAL;
ALTER TABLE rollup_pending_click_batches
    ALTER COLUMN app_ids SET STORAGE EXTERNAL,
    ALTER COLUMN click_ids SET STORAGE EXTERNAL,
    ALTER COLUMN click_times SET STORAGE EXTERNAL;

-- Moves every committed batch into rollup_pending_devices (earliest min_time per device) and
-- rollup_pending_clicks. Runs inside process_rollups() under the rollup lock. Without the reports
-- migrations (022 only) no batch is ever written.
CREATE OR REPLACE FUNCTION rollup_fold_device_batches()
RETURNS void
LANGUAGE plpgsql AS $fn$
BEGIN
    IF to_regclass('rollup_pending_devices') IS NULL THEN
        RETURN;
    END IF;
    WITH taken AS (DELETE FROM rollup_pending_device_batches RETURNING app_ids, device_ids, min_times)
    INSERT INTO rollup_pending_devices AS p (app_id, device_id, min_time)
    SELECT u.app_id, u.device_id, min(u.min_time)
    FROM taken CROSS JOIN LATERAL unnest(taken.app_ids, taken.device_ids, taken.min_times) AS u(app_id, device_id, min_time)
    GROUP BY u.app_id, u.device_id
    ON CONFLICT (app_id, device_id) DO UPDATE SET min_time = LEAST(p.min_time, EXCLUDED.min_time)
    WHERE p.min_time IS NULL OR EXCLUDED.min_time < p.min_time;
    WITH taken AS (DELETE FROM rollup_pending_click_batches RETURNING app_ids, click_ids, click_times)
    INSERT INTO rollup_pending_clicks (app_id, click_id, click_time)
    SELECT DISTINCT u.app_id, u.click_id, u.click_time
    FROM taken CROSS JOIN LATERAL unnest(taken.app_ids, taken.click_ids, taken.click_times) AS u(app_id, click_id, click_time)
    ON CONFLICT DO NOTHING;
END
$fn$;

ALTER FUNCTION process_rollups() RENAME TO process_rollups_queued;

-- Applies all queued work (051's process_rollups, after folding the device batches).
CREATE FUNCTION process_rollups()
RETURNS integer
LANGUAGE plpgsql AS $fn$
BEGIN
    PERFORM pg_advisory_xact_lock(1684370546, hashtext('rollups:' || current_schema()));
    PERFORM rollup_fold_device_batches();
    RETURN process_rollups_queued();
END
$fn$;

ALTER FUNCTION rebuild_rollups() RENAME TO rebuild_rollups_all;

-- Recomputes every rollup from the raw tables and empties every queue (the batches too).
CREATE FUNCTION rebuild_rollups()
RETURNS void
LANGUAGE plpgsql AS $fn$
BEGIN
    PERFORM pg_advisory_xact_lock(1684370546, hashtext('rollups:' || current_schema()));
    DELETE FROM rollup_pending_device_batches;
    DELETE FROM rollup_pending_click_batches;
    PERFORM rebuild_rollups_all();
END
$fn$;

-- 060's function with the devices and the clicks appended as one batch row each instead of one
-- upserted row per device and click.
CREATE OR REPLACE FUNCTION queue_rollups_touched()
RETURNS bigint
LANGUAGE plpgsql AS $fn$
DECLARE
    keys bigint;
BEGIN
    SELECT count(*) INTO keys FROM pg_temp.load_touched;
    IF keys = 0 THEN
        RETURN 0;
    END IF;
    IF to_regclass('rollup_pending_keys') IS NULL THEN
        -- 022 only (no reports migrations): 020's UTC rollup.
        INSERT INTO aggregator_pending_utc_days (app_id, day)
        SELECT DISTINCT app_id, day FROM pg_temp.load_touched
        ON CONFLICT DO NOTHING;
        RETURN keys;
    END IF;

    INSERT INTO rollup_pending_utc_days (app_id, day)
    SELECT DISTINCT app_id, day FROM pg_temp.load_touched
    ON CONFLICT DO NOTHING;

    INSERT INTO rollup_pending_keys (app_id, day)
    SELECT DISTINCT t.app_id, (x.at AT TIME ZONE coalesce(a.time_zone, 'UTC'))::date
    FROM pg_temp.load_touched t
    LEFT JOIN apps a ON a.id = t.app_id
    CROSS JOIN LATERAL (VALUES (t.first_at), (t.last_at)) AS x(at)
    ON CONFLICT DO NOTHING;

    -- One row for every device of the cycle (folded into rollup_pending_devices by the next pass).
    INSERT INTO rollup_pending_device_batches (app_ids, device_ids, min_times)
    SELECT array_agg(d.app_id), array_agg(d.device_id), array_agg(d.first_seen) FROM pg_temp.load_devices d
    HAVING count(*) > 0;

    INSERT INTO rollup_pending_click_batches (app_ids, click_ids, click_times)
    SELECT array_agg(x.app_id), array_agg(x.click_id), array_agg(x.time) FROM pg_temp.load_staging x
    WHERE x.kind = 'click' AND x.click_id IS NOT NULL
    HAVING count(*) > 0;

    -- The app's newest loaded event time (caps retention's "day N reached").
    INSERT INTO rollup_apps AS a (app_id, newest_event_at)
    SELECT t.app_id, max(t.last_event_at) FROM pg_temp.load_touched t
    WHERE t.last_event_at IS NOT NULL GROUP BY t.app_id
    ON CONFLICT (app_id) DO UPDATE SET newest_event_at = GREATEST(a.newest_event_at, EXCLUDED.newest_event_at)
    WHERE a.newest_event_at IS NULL OR a.newest_event_at < EXCLUDED.newest_event_at;
    RETURN keys;
END
$fn$;

-- 022_aggregator_rollup_queue: rollups off the load's critical path.
--
-- The aggregator no longer calls refresh_rollups inside its load transaction. It calls
-- queue_rollups(app_ids, days) there (cheap: it records what the cycle touched, derived from the
-- touched keys and, with the reports migrations, from pg_temp.load_staging, which only exists
-- inside the load transaction's session), and process_rollups() in a transaction of its own, on its
-- own cadence (docs/aggregator.md, "Rollups"). Both functions have the signatures the reports
-- migrations (051) define; 051 replaces these with the full set of rollups. Until then (and in the
-- loader-only benchmark) they maintain 020's rollup_events_daily.
--
-- The queue table is named so that 051's own queue tables do not collide with it; after 051 it
-- is no longer written.

CREATE TABLE aggregator_pending_utc_days (app_id text NOT NULL, day date NOT NULL, PRIMARY KEY (app_id, day));

-- Records the (app_id, UTC day) keys a load cycle touched (parallel arrays, duplicates allowed,
-- NULL arrays mean nothing to do). Runs inside the load transaction: the keys become pending
-- exactly when the rows that touched them commit.
CREATE OR REPLACE FUNCTION queue_rollups(p_app_ids text[], p_days date[])
RETURNS void
LANGUAGE plpgsql AS $fn$
BEGIN
    IF p_app_ids IS NULL OR p_days IS NULL THEN
        RETURN;
    END IF;
    INSERT INTO aggregator_pending_utc_days (app_id, day)
    SELECT DISTINCT u.app_id, u.day FROM unnest(p_app_ids, p_days) AS u(app_id, day)
    WHERE u.app_id IS NOT NULL AND u.day IS NOT NULL
    ON CONFLICT DO NOTHING;
END
$fn$;

-- Recomputes the rollups of every pending key and empties the queue, in the caller's transaction.
-- Serialised per schema with the same advisory key the reports migrations use for rollup writers.
-- Returns the number of keys recomputed.
CREATE OR REPLACE FUNCTION process_rollups()
RETURNS integer
LANGUAGE plpgsql AS $fn$
DECLARE
    apps text[];
    days date[];
BEGIN
    PERFORM pg_advisory_xact_lock(1684370546, hashtext('rollups:' || current_schema()));
    WITH taken AS (DELETE FROM aggregator_pending_utc_days RETURNING app_id, day)
    SELECT array_agg(app_id), array_agg(day) INTO apps, days FROM taken;
    IF apps IS NULL THEN
        RETURN 0;
    END IF;
    PERFORM refresh_rollups(apps, days);
    RETURN cardinality(apps);
END
$fn$;

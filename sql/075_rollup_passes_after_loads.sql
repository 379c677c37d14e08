-- 075_rollup_passes_after_loads: a rollup pass, or a rebuild, waits for a load in progress.
--
-- A load queues the (app, day) keys it touched with INSERT ... ON CONFLICT DO NOTHING
-- (queue_rollups_touched, 061). When a key is queued already (committed by an earlier load that no
-- pass has applied yet: under `run`'s 10 s rollup interval, today's key nearly always is), the load
-- writes nothing and locks nothing for it. A pass in another session (`report daily`'s, `aggregate
-- --once`'s when another aggregator holds the load lock, an operator's `SELECT process_rollups()`,
-- or `report rebuild` and `apps update`, which called rebuild_rollups without the load lock) could
-- then take the key (DELETE ... RETURNING) and recompute the day from a snapshot without the load's
-- uncommitted rows; when the load committed, its rows were in the raw tables and the day was no
-- longer queued. That day's rollups missed the load's events until a rebuild, and
-- report_rollups_pending showed nothing, so `report daily` wrote it as complete. (060 covered only
-- the other order, a pass that took the key first: the load's insert then waits for it.)
--
-- Fix: process_rollups() and rebuild_rollups() take the load lock (LoadSQL.lock: the transaction
-- advisory lock ('detr', hash of the schema)) before the rollups lock, waiting for a load in
-- progress, so no load is ever between its queueing and its commit while a pass runs. Loads take
-- only the load lock (and, on a 022-only schema, the rollups lock after it): the same order, no
-- deadlock. A load that finds the lock held by a pass is `busy` and runs at the next tick, as when
-- another aggregator holds it; the aggregator's own pass runs between its loads on the same
-- connection and never waits for itself (advisory locks are re-entrant within a session, so
-- Replay.rebuildRollups, which holds the load lock already, goes on as before).
--
-- The bodies are unchanged: each function is renamed (keeping its owner, privileges and 070's
-- TimeZone clause) and a new function of the old name takes the lock and calls it.

ALTER FUNCTION process_rollups() RENAME TO process_rollups_locked;

-- Applies all queued work once no load is in progress (062's pass, now process_rollups_locked).
CREATE FUNCTION process_rollups()
RETURNS integer
LANGUAGE plpgsql AS $fn$
BEGIN
    PERFORM pg_advisory_xact_lock(1684370546, hashtext(current_schema()));
    RETURN process_rollups_locked();
END
$fn$;
ALTER FUNCTION process_rollups() SET TimeZone = 'UTC';

ALTER FUNCTION rebuild_rollups() RENAME TO rebuild_rollups_locked;

-- Recomputes every rollup from the raw tables once no load is in progress (061's rebuild_rollups,
-- now rebuild_rollups_locked).
CREATE FUNCTION rebuild_rollups()
RETURNS void
LANGUAGE plpgsql AS $fn$
BEGIN
    PERFORM pg_advisory_xact_lock(1684370546, hashtext(current_schema()));
    PERFORM rebuild_rollups_locked();
END
$fn$;
ALTER FUNCTION rebuild_rollups() SET TimeZone = 'UTC';

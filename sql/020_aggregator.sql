-- 020_aggregator: what the loader needs beyond 001_core, and the rollup seam.
--
-- The aggregator calls refresh_rollups(app_ids, days) inside every load transaction with the
-- distinct (app_id, UTC day) keys of the raw rows that cycle inserted (events, clicks, matches),
-- and rebuild_rollups() for a full recomputation (docs/aggregator.md). The reports migrations
-- replace both functions (CREATE OR REPLACE, same signatures) with the full set of rollups; the
-- contract is: refresh_rollups recomputes exactly the given keys from the raw tables, so that after
-- any sequence of cycles the rollups equal rebuild_rollups() run from scratch.

-- The time of the event that supplied devices.install_click_id: the earliest such event wins, so a
-- late-arriving older event corrects it (and a later one never overwrites it).
ALTER TABLE devices ADD COLUMN IF NOT EXISTS install_click_at timestamptz;

-- The first rollup: per app, UTC day, kind (event|retention) and event name, the number of events
-- and of distinct devices.
CREATE TABLE rollup_events_daily (
    app_id text NOT NULL,
    day date NOT NULL,
    kind text NOT NULL,
    name text NOT NULL,
    events bigint NOT NULL,
    devices bigint NOT NULL,
    PRIMARY KEY (app_id, day, kind, name)
);

-- Recomputes the rollups of the given (app_id, day) keys (parallel arrays, duplicates allowed,
-- NULL arrays mean nothing to do): delete then insert per key, each key's query pruned to one day
-- partition, so the cost follows the touched days, not the size of the tables.
CREATE OR REPLACE FUNCTION refresh_rollups(p_app_ids text[], p_days date[])
RETURNS void
LANGUAGE plpgsql
AS $fn$
DECLARE
    k record;
    lower_bound timestamptz;
BEGIN
    IF p_app_ids IS NULL OR p_days IS NULL THEN
        RETURN;
    END IF;
    FOR k IN
        SELECT DISTINCT u.app_id, u.day FROM unnest(p_app_ids, p_days) AS u(app_id, day)
        WHERE u.app_id IS NOT NULL AND u.day IS NOT NULL
        ORDER BY 1, 2
    LOOP
        lower_bound := k.day::timestamp AT TIME ZONE 'UTC';
        DELETE FROM rollup_events_daily r WHERE r.app_id = k.app_id AND r.day = k.day;
        INSERT INTO rollup_events_daily (app_id, day, kind, name, events, devices)
        SELECT k.app_id, k.day, e.kind, e.name, count(*), count(DISTINCT e.device_id)
        FROM events e
        WHERE e.app_id = k.app_id AND e.event_time >= lower_bound AND e.event_time < lower_bound + interval '1 day'
        GROUP BY e.kind, e.name;
    END LOOP;
END
$fn$;

-- Recomputes every rollup from the raw tables in one transaction (readers see the old rows until
-- it commits). `detour-analytics aggregate --rebuild-rollups` calls it under the load lock.
CREATE OR REPLACE FUNCTION rebuild_rollups()
RETURNS void
LANGUAGE plpgsql
AS $fn$
BEGIN
    DELETE FROM rollup_events_daily;
    INSERT INTO rollup_events_daily (app_id, day, kind, name, events, devices)
    SELECT e.app_id, (e.event_time AT TIME ZONE 'UTC')::date, e.kind, e.name, count(*), count(DISTINCT e.device_id)
    FROM events e
    GROUP BY 1, 2, 3, 4;
END
$fn$;

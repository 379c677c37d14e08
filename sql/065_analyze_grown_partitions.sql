-- The rollup pass analyses a queued day's partition also when it has grown to more than twice its
-- size at its last ANALYZE and to over 16 pages (sql/062 analysed only never-analysed ones).
--
-- A day partition analysed while small (its first events) and then given a large batch at once (an
-- outage's backlog, a replay, `aggregate --once` after a busy hour) was planned as the small day:
-- 100,000 events of one day loaded after its first 20 made the pass run for over 10 minutes (3 s
-- after a manual ANALYZE); autovacuum analyses such a partition within a minute, after the pass has
-- been planned. The doubling rule bounds the extra ANALYZEs to a few per partition and day, each
-- with the small sample of 062 (statistics target 10). Until this migration the aggregator ran the
-- same rule from its own code before each of its passes (2026-11-30), which `report daily`'s own
-- process_rollups() call did not; here it covers every caller.

CREATE OR REPLACE FUNCTION rollup_analyze_new_partitions(p_days date[]) RETURNS void
LANGUAGE plpgsql AS $fn$
DECLARE
    t record;
    saved_target text := current_setting('default_statistics_target');
BEGIN
    FOR t IN
        SELECT DISTINCT to_regclass(p.parent || '_p' || to_char(d.day, 'YYYYMMDD')) AS part
        FROM unnest(p_days) AS d(day) CROSS JOIN (VALUES ('events'), ('clicks'), ('matches')) AS p(parent)
        WHERE d.day IS NOT NULL
    LOOP
        CONTINUE WHEN t.part IS NULL;
        IF EXISTS (
            SELECT 1 FROM pg_class c
            WHERE c.oid = t.part
              AND (c.reltuples < 0
                   OR pg_relation_size(c.oid)
                      > 2 * greatest(c.relpages, 8)::bigint * current_setting('block_size')::bigint)
        ) THEN
            PERFORM set_config('default_statistics_target', '10', true);
            EXECUTE format('ANALYZE %s', t.part);
            PERFORM set_config('default_statistics_target', saved_target, true);
        END IF;
    END LOOP;
END
$fn$;

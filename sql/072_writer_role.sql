-- 072_writer_role: the pipeline's runtime role, detour_writer, and exactly what it needs.
--
-- The docker-compose deployment (deploy/postgres-init.sh) runs `migrate` as the schema's owner and
-- the pipeline (`run`, `serve`, `aggregate`, `report`) as a login role in detour_writer, so a
-- compromised pipeline or an SQL injection cannot change the schema, read other databases' data,
-- write keys or apps, or act as a superuser. What the running code does, and what it takes
-- (found by reading the code and by running the pipeline as such a role: docs/schema.md, "Roles"):
--   * ingest's key lookups, the rollups' per-app settings and funnels: SELECT on apps, api_keys,
--     funnels (keys and apps are written by `apps`, an admin command run as the owner);
--   * the load cycle: COPY and INSERT ... ON CONFLICT DO NOTHING RETURNING into the raw tables
--     (events, clicks, matches, through their partitioned parents) and their dedup tables, which it
--     never updates or deletes: SELECT, INSERT; devices, links and load_checkpoints are also
--     updated (corrections, ON CONFLICT DO UPDATE, the checkpoint): SELECT, INSERT, UPDATE;
--   * the rollup functions (queue_rollups_touched, process_rollups, rebuild_rollups; run by the
--     aggregator and by `report daily`/`report rebuild`) rewrite every rollup_* table and the
--     aggregator_pending_utc_days queue with DELETE and INSERT (no TRUNCATE of a real table):
--     SELECT, INSERT, UPDATE, DELETE;
--   * the report API, `report` and the daily job read the report_* views: SELECT;
--   * temporary tables (TEMPORARY on the database: PUBLIC has it; the init script grants it too)
--     and advisory locks (no privilege).
-- Not granted: schema_migrations, any DDL (CREATE on the schema belongs to the owner alone),
-- TRUNCATE, REFERENCES, TRIGGER, direct access to partitions.
--
-- Two things the running pipeline does need ownership for, so they run as the function's owner
-- (SECURITY DEFINER) with a fixed search_path (pg_temp last: a caller's temporary table named
-- pg_class must not stand in for the catalog), executable by detour_writer and not by PUBLIC:
--   * ensure_day_partitions: CREATE TABLE in the schema and ATTACH PARTITION (owner of the parent);
--     it moves a day's rows out of the default partition, which it alone reads or deletes from;
--   * ANALYZE (sql/062, sql/065: the rollup pass analyses new and grown day partitions and grown
--     derived tables; by a role that does not own the table it is skipped with a warning, and the
--     pass was planned for the wrong sizes, 2-3x as long): rollup_analyze(regclass) below, which
--     rollup_analyze_if_grown and rollup_analyze_new_partitions now call. rebuild_rollups and
--     rollup_build_summaries still ANALYZE directly: as detour_writer a rebuild is correct but runs
--     without fresh statistics (run it as the owner: docs/schema.md).
-- A later migration that replaces ensure_day_partitions or rollup_analyze with CREATE OR REPLACE
-- must repeat SECURITY DEFINER and the SET clause (CREATE OR REPLACE resets both), one that
-- replaces the two analysing functions keeps calling rollup_analyze, and one that adds a table or
-- view grants detour_writer what the code does with it (DeploymentFilesTests.writerPrivileges checks
-- the grants and the SECURITY DEFINER functions; rolesOnAFreshDatabase that a partition is analysed).
--
-- Roles are cluster-wide: detour_writer is created here when missing and the migrating role may (as
-- 001 does detour_analyst); a schema owner without CREATEROLE gets a warning, and the grants are
-- skipped with another unless deploy/postgres-init.sh (or an administrator) made the role first.

DO $role$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'detour_writer') THEN
        BEGIN
            CREATE ROLE detour_writer NOLOGIN;
        EXCEPTION
            WHEN duplicate_object OR unique_violation THEN NULL;
            WHEN insufficient_privilege THEN
                RAISE WARNING 'cannot create role detour_writer (needs CREATEROLE); create it by hand';
        END;
    END IF;
END
$role$;

ALTER FUNCTION ensure_day_partitions(regclass, date, date) SECURITY DEFINER SET search_path = pg_catalog, pg_temp;
REVOKE ALL ON FUNCTION ensure_day_partitions(regclass, date, date) FROM PUBLIC;

-- ANALYZE p_table as the function's owner (the schema's owner, who owns every table in it). The
-- name comes out of regclass schema-qualified and quoted (public is not on this search_path).
CREATE FUNCTION rollup_analyze(p_table regclass) RETURNS void
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $fn$
BEGIN
    EXECUTE format('ANALYZE %s', p_table);
END
$fn$;
REVOKE ALL ON FUNCTION rollup_analyze(regclass) FROM PUBLIC;

-- 062's rollup_analyze_if_grown, analysing through rollup_analyze.
CREATE OR REPLACE FUNCTION rollup_analyze_if_grown(p_table regclass, p_inserted bigint) RETURNS void
LANGUAGE plpgsql AS $fn$
DECLARE
    estimated real;
BEGIN
    SELECT c.reltuples INTO estimated FROM pg_class c WHERE c.oid = p_table;
    IF p_inserted >= 1000 AND (estimated IS NULL OR estimated < 0 OR p_inserted > 0.2 * estimated) THEN
        PERFORM rollup_analyze(p_table);
    END IF;
END
$fn$;

-- 065's rollup_analyze_new_partitions, analysing through rollup_analyze (the statistics target set
-- here for the transaction holds inside it: SECURITY DEFINER changes only the user and its SET clause).
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
            PERFORM rollup_analyze(t.part);
            PERFORM set_config('default_statistics_target', saved_target, true);
        END IF;
    END LOOP;
END
$fn$;

DO $grant$
DECLARE
    s text := current_schema();
    t record;
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'detour_writer') THEN
        RAISE WARNING 'role detour_writer does not exist: the pipeline''s privileges were not granted';
        RETURN;
    END IF;
    EXECUTE format('GRANT USAGE ON SCHEMA %I TO detour_writer', s);
    EXECUTE format('GRANT SELECT ON %1$I.apps, %1$I.api_keys, %1$I.funnels TO detour_writer', s);
    EXECUTE format(
        'GRANT SELECT, INSERT ON %1$I.events, %1$I.clicks, %1$I.matches, %1$I.event_ids, %1$I.click_ids, '
        '%1$I.match_ids TO detour_writer', s);
    EXECUTE format('GRANT SELECT, INSERT, UPDATE ON %1$I.devices, %1$I.links, %1$I.load_checkpoints TO detour_writer', s);
    FOR t IN
        SELECT c.relname, c.relkind FROM pg_class c
        WHERE c.relnamespace = (SELECT n.oid FROM pg_namespace n WHERE n.nspname = s)
          AND ((c.relkind = 'r' AND (c.relname LIKE 'rollup\_%' OR c.relname = 'aggregator_pending_utc_days'))
               OR (c.relkind = 'v' AND c.relname LIKE 'report\_%'))
        ORDER BY c.relname
    LOOP
        EXECUTE format('GRANT %s ON %I.%I TO detour_writer',
            CASE t.relkind WHEN 'v' THEN 'SELECT' ELSE 'SELECT, INSERT, UPDATE, DELETE' END, s, t.relname);
    END LOOP;
    EXECUTE format('GRANT EXECUTE ON FUNCTION %1$I.ensure_day_partitions(regclass, date, date), '
        '%1$I.rollup_analyze(regclass) TO detour_writer', s);
END
$grant$;

-- 073_grant_writer_function: 072's grants as a function the schema's owner can run again.
--
-- 072 skips its grants, with a warning, when detour_writer does not exist (a schema owner without
-- CREATEROLE, the role not made beforehand). A migration runs once: creating the role afterwards
-- (what the warning says to do) and running `migrate` again said "schema is up to date" and
-- granted nothing, and the pipeline was refused (42501) on every table, with no way back short of
-- copying 072's DO block by hand. grant_writer_privileges() grants exactly what 072 lists
-- (idempotent: granting again changes nothing); this migration runs it, and the owner runs it
-- after creating the role:
--     SELECT grant_writer_privileges();
-- It returns whether it granted (false, with a warning, while the role is missing). Its search_path
-- is the one the migration ran with, so it grants in this schema whoever calls it from where.
-- Not executable by PUBLIC (only the owner can grant on its objects anyway).

CREATE FUNCTION grant_writer_privileges() RETURNS boolean
LANGUAGE plpgsql AS $fn$
DECLARE
    s text := current_schema();
    t record;
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'detour_writer') THEN
        RAISE WARNING 'role detour_writer does not exist: the pipeline''s privileges were not granted; create it (CREATE ROLE detour_writer NOLOGIN, as a role with CREATEROLE), then run SELECT grant_writer_privileges() as the schema''s owner';
        RETURN false;
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
    RETURN true;
END
$fn$;
ALTER FUNCTION grant_writer_privileges() SET search_path FROM CURRENT;
REVOKE ALL ON FUNCTION grant_writer_privileges() FROM PUBLIC;

SELECT grant_writer_privileges();

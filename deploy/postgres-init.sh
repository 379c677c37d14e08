#!/bin/sh
# deploy/postgres-init.sh: the database roles of the docker-compose deployment (least privilege).
#
# The postgres image runs this once, from /docker-entrypoint-initdb.d, when it initialises an empty
# data volume; run it by hand to upgrade a deployment made before it (docs/schema.md, "Upgrading a
# deployment made before the roles", says in which order):
#   docker compose exec postgres sh /docker-entrypoint-initdb.d/10-detour-roles.sh
# It is idempotent: run again, it changes nothing but the two passwords (set from the environment
# each time, so it is also how a password is changed), the ownership of objects made since, and a
# CONNECT or TEMPORARY grant on the database to PUBLIC, detour_writer or detour_analyst (revoked).
#
# It connects as the image's superuser (POSTGRES_USER) to POSTGRES_DB (psql's usual PGHOST,
# PGPORT, PGPASSWORD apply) and makes, in that database's schema `public`:
#   * DETOUR_OWNER_ROLE (default detour_owner), LOGIN, password DETOUR_OWNER_PASSWORD: the owner of
#     the schema and of everything in it; `migrate` connects as it (and an administrator's `apps`
#     and `report rebuild`). No SUPERUSER, CREATEDB, CREATEROLE, REPLICATION, BYPASSRLS.
#   * detour_writer, NOLOGIN: what the running pipeline (run, serve, aggregate, report) needs and no
#     more, granted by the migrations (sql/072_writer_role.sql); no DDL, no keys or apps written.
#   * DETOUR_PIPELINE_ROLE (default detour_pipeline), LOGIN, password DETOUR_PIPELINE_PASSWORD, a
#     member of detour_writer: the role in the pipeline's DATABASE_URL.
#   * detour_analyst, NOLOGIN, if missing (sql/001_core.sql makes it when it can; the owner cannot).
# Only the owner and DETOUR_PIPELINE_ROLE (and superusers) may connect to POSTGRES_DB and create
# temporary tables in it: CONNECT and TEMPORARY are revoked from PUBLIC, and from detour_writer and
# detour_analyst, whose members include the logins of every other detour deployment on the server
# (without that, one deployment's pipeline held the writer's privileges in the other's database).
# A person's login (a member of detour_analyst) needs `GRANT CONNECT ON DATABASE ... TO` it. Two
# deployments on one server need login names of their own (DETOUR_OWNER_ROLE, DETOUR_PIPELINE_ROLE):
# one name is one login, with the password of whichever deployment ran this script last.
# Nobody but the owner may create objects in `public`. Objects already there that another role owns
# (a deployment whose migrations ran as the superuser) are given to the owner: REASSIGN OWNED cannot
# do that, the image's POSTGRES_USER being the bootstrap superuser. Extension members are left alone.
#
# The passwords have no default (compose refuses to start without them) and must be URL-safe: they
# go into DATABASE_URL as they are, e.g. `openssl rand -hex 24`.
set -e

if [ -z "${DETOUR_OWNER_PASSWORD:-}" ] || [ -z "${DETOUR_PIPELINE_PASSWORD:-}" ]; then
    echo "postgres-init.sh: set DETOUR_OWNER_PASSWORD and DETOUR_PIPELINE_PASSWORD (see docker-compose.yml)" >&2
    exit 1
fi

psql -v ON_ERROR_STOP=1 --no-psqlrc --quiet \
    --username "${POSTGRES_USER:-postgres}" --dbname "${POSTGRES_DB:-${POSTGRES_USER:-postgres}}" \
    -v owner="${DETOUR_OWNER_ROLE:-detour_owner}" -v pipeline="${DETOUR_PIPELINE_ROLE:-detour_pipeline}" <<'SQL'
-- The passwords straight from the environment (not on psql's command line, which ps shows).
\getenv owner_password DETOUR_OWNER_PASSWORD
\getenv pipeline_password DETOUR_PIPELINE_PASSWORD
BEGIN;
-- Names printed by the queries below come out schema-qualified (public is not on this path).
SET LOCAL search_path = pg_catalog;
SET LOCAL client_min_messages = warning;
-- Roles are cluster-wide: each is made when missing, then given its attributes (again).
SELECT format('CREATE ROLE %I', :'owner') WHERE NOT EXISTS (SELECT FROM pg_roles WHERE rolname = :'owner') \gexec
ALTER ROLE :"owner" WITH LOGIN INHERIT NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS
    PASSWORD :'owner_password';
-- detour_writer and detour_analyst have fixed names (the migrations grant to them, and sql/001 and
-- sql/072 create them when they can): made unless present, tolerating a concurrent creator.
DO $roles$
DECLARE
    r text;
BEGIN
    FOREACH r IN ARRAY ARRAY['detour_writer', 'detour_analyst'] LOOP
        IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = r) THEN
            BEGIN
                EXECUTE format('CREATE ROLE %I NOLOGIN', r);
            EXCEPTION WHEN duplicate_object OR unique_violation THEN NULL;
            END;
        END IF;
    END LOOP;
END
$roles$;
SELECT 'ALTER ROLE detour_writer WITH NOLOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS'
WHERE EXISTS (
    SELECT FROM pg_roles WHERE rolname = 'detour_writer'
      AND (rolcanlogin OR rolsuper OR rolcreatedb OR rolcreaterole OR rolreplication OR rolbypassrls)) \gexec
SELECT format('CREATE ROLE %I', :'pipeline') WHERE NOT EXISTS (SELECT FROM pg_roles WHERE rolname = :'pipeline') \gexec
ALTER ROLE :"pipeline" WITH LOGIN INHERIT NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS
    PASSWORD :'pipeline_password';
GRANT detour_writer TO :"pipeline";

-- The database: connecting and temporary tables (the loader's and the rollups' scratch tables, the
-- admin commands') for this deployment's two logins alone, by name. Not for PUBLIC (which has both
-- by default), nor for detour_writer or detour_analyst: those are cluster-wide with fixed names,
-- every detour database's migrations grant to them, and another deployment's logins on this server
-- are members too, who would hold the writer's (analyst's) privileges here. Superusers connect
-- regardless; a person's login in detour_analyst is granted CONNECT by hand (docs/schema.md). The
-- revoke from detour_writer also undoes this script's own grant to it (until 2026-12-02).
SELECT format('GRANT CONNECT, TEMPORARY ON DATABASE %I TO %I, %I', current_database(), :'owner', :'pipeline') \gexec
SELECT format('REVOKE CONNECT, TEMPORARY ON DATABASE %I FROM PUBLIC, detour_writer, detour_analyst',
              current_database()) \gexec
-- People's logins in detour_analyst that cannot connect now are named, with the statement that lets
-- one in: until 2026-12-02 they connected through PUBLIC, and an upgrade must not shut analysts out
-- without a word. (On a server shared with other deployments, their analysts are listed too.)
DO $analysts$
DECLARE
    names text;
BEGIN
    SELECT string_agg(quote_ident(r.rolname), ', ' ORDER BY r.rolname) INTO names
    FROM pg_roles r
    WHERE r.rolcanlogin AND NOT r.rolsuper AND pg_has_role(r.oid, 'detour_analyst', 'MEMBER')
      AND NOT has_database_privilege(r.oid, current_database(), 'CONNECT');
    IF names IS NOT NULL THEN
        RAISE WARNING 'logins in detour_analyst without CONNECT on database %: %', current_database(), names
            USING HINT = format('CONNECT is no longer granted to PUBLIC; for a person who reads this '
                                'database''s reports, as a superuser: GRANT CONNECT ON DATABASE %I TO <login>',
                                current_database());
    END IF;
END
$analysts$;

-- The schema: the owner's; everyone else may only use it.
ALTER SCHEMA public OWNER TO :"owner";
REVOKE CREATE ON SCHEMA public FROM PUBLIC;
GRANT USAGE ON SCHEMA public TO detour_writer;

-- Objects made before the owner existed (an upgrade), or since by another role, go to the owner:
-- tables (with their partitions, each its own relation), views, sequences other than those a
-- column owns (they follow their table), then functions.
SELECT format('ALTER %s public.%I OWNER TO %I',
              CASE c.relkind WHEN 'v' THEN 'VIEW' WHEN 'm' THEN 'MATERIALIZED VIEW' WHEN 'S' THEN 'SEQUENCE'
                             WHEN 'f' THEN 'FOREIGN TABLE' ELSE 'TABLE' END,
              c.relname, :'owner')
FROM pg_class c
WHERE c.relnamespace = 'public'::regnamespace AND c.relkind IN ('r', 'p', 'v', 'm', 'S', 'f')
  AND c.relowner <> (SELECT oid FROM pg_roles WHERE rolname = :'owner')
  AND NOT EXISTS (
      SELECT FROM pg_depend d
      WHERE d.classid = 'pg_class'::regclass AND d.objid = c.oid
        AND (d.deptype = 'e' OR (c.relkind = 'S' AND d.deptype IN ('a', 'i'))))
ORDER BY c.oid \gexec
SELECT format('ALTER ROUTINE %s OWNER TO %I', p.oid::regprocedure, :'owner')
FROM pg_proc p
WHERE p.pronamespace = 'public'::regnamespace AND p.prokind IN ('f', 'p', 'w')
  AND p.proowner <> (SELECT oid FROM pg_roles WHERE rolname = :'owner')
  AND NOT EXISTS (SELECT FROM pg_depend d WHERE d.classid = 'pg_proc'::regclass AND d.objid = p.oid AND d.deptype = 'e')
ORDER BY p.oid \gexec
COMMIT;
SQL
echo "postgres-init.sh: roles ready in database ${POSTGRES_DB:-${POSTGRES_USER:-postgres}}"

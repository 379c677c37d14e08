-- 001_core: apps and keys, the raw tables (events, clicks, matches) partitioned by day with their
-- dedup tables, devices, links, load checkpoints, the daily partition function, the analyst role.
--
-- Rules for every migration file (see docs/schema.md):
--   * no schema qualification: objects land in the first schema of search_path (tests use one per test);
--   * no BEGIN/COMMIT: the migrator wraps each file in a transaction;
--   * app_id comes first in every key (the schema distributes by app_id on Citus unchanged).

-- Apps and their settings (reports.md: reporting time zone and the three windows).
CREATE TABLE apps (
    id text PRIMARY KEY CHECK (id ~ '^[A-Za-z0-9_.-]{1,64}$'),
    name text NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    time_zone text NOT NULL DEFAULT 'UTC',
    install_lookback interval NOT NULL DEFAULT interval '7 days',
    reengagement_inactivity interval NOT NULL DEFAULT interval '7 days',
    conversion_window interval NOT NULL DEFAULT interval '7 days'
);

-- API keys, stored hashed: key_hash is the lowercase hex SHA-256 of the full key; prefix is its first
-- characters, for display. Ingest looks a key up by (app_id, key_hash) and checks revoked_at.
CREATE TABLE api_keys (
    app_id text NOT NULL REFERENCES apps (id) ON DELETE CASCADE,
    key_hash text NOT NULL CHECK (key_hash ~ '^[0-9a-f]{64}$'),
    kind text NOT NULL CHECK (kind IN ('publishable', 'secret')),
    prefix text NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    revoked_at timestamptz,
    PRIMARY KEY (app_id, key_hash)
);

-- Dedup tables. A unique key on a partitioned table must contain the partition key, so a key on
-- events (app_id, event_id, event_time) would let the same event_id land twice with two times (a
-- retried request whose clock was corrected differently). Exactly-once therefore lives in these
-- unpartitioned tables: the loader inserts ids with ON CONFLICT DO NOTHING RETURNING and inserts
-- into the partitioned table only the rows that came back. The stored time finds the raw row
-- with partition pruning.
CREATE TABLE event_ids (
    app_id text NOT NULL,
    event_id text NOT NULL,
    event_time timestamptz NOT NULL,
    PRIMARY KEY (app_id, event_id)
);

CREATE TABLE click_ids (
    app_id text NOT NULL,
    click_id text NOT NULL,
    click_time timestamptz NOT NULL,
    PRIMARY KEY (app_id, click_id)
);

-- A click matches at most one install: the first match loaded for a click wins, later ones are dropped.
CREATE TABLE match_ids (
    app_id text NOT NULL,
    click_id text NOT NULL,
    match_time timestamptz NOT NULL,
    PRIMARY KEY (app_id, click_id)
);

-- Actions and retention events from the SDKs, one row per envelope of kind event|retention.
CREATE TABLE events (
    app_id text NOT NULL,
    event_id text NOT NULL,
    kind text NOT NULL CHECK (kind IN ('event', 'retention')),
    name text NOT NULL,
    device_id text NOT NULL,
    platform text,
    sdk text,
    event_time timestamptz NOT NULL,
    received_at timestamptz NOT NULL,
    client_ts timestamptz,
    sent_at timestamptz,
    install_click_id text,
    open_click_id text,
    open_type text,
    click_id text,
    data jsonb,
    metadata jsonb,
    clock text NOT NULL DEFAULT 'ok' CHECK (clock IN ('ok', 'skew_corrected', 'future_clamped'))
) PARTITION BY RANGE (event_time);

CREATE INDEX events_app_device_time ON events (app_id, device_id, event_time);

-- Clicks from the link service (kind web or universal_link).
CREATE TABLE clicks (
    app_id text NOT NULL,
    click_id text NOT NULL,
    event_id text,
    url text,
    path text NOT NULL,
    query jsonb,
    utm_source text,
    utm_medium text,
    utm_campaign text,
    platform text,
    click_kind text NOT NULL CHECK (click_kind IN ('web', 'universal_link')),
    click_time timestamptz NOT NULL,
    received_at timestamptz NOT NULL,
    user_agent text,
    ip text,
    referrer text,
    clock text NOT NULL DEFAULT 'ok'
) PARTITION BY RANGE (click_time);

CREATE INDEX clicks_app_click ON clicks (app_id, click_id);

-- Deferred-install matches from the link service.
CREATE TABLE matches (
    app_id text NOT NULL,
    click_id text NOT NULL,
    event_id text,
    method text NOT NULL CHECK (method IN ('deterministic', 'probabilistic')),
    score integer,
    match_time timestamptz NOT NULL,
    received_at timestamptz NOT NULL,
    clock text NOT NULL DEFAULT 'ok'
) PARTITION BY RANGE (match_time);

CREATE INDEX matches_app_click ON matches (app_id, click_id);

-- Default partitions: an event of any time, however late or far in the future, always has a home.
-- ensure_day_partitions moves rows out of a default partition when it creates their day.
CREATE TABLE events_default PARTITION OF events DEFAULT;
CREATE TABLE clicks_default PARTITION OF clicks DEFAULT;
CREATE TABLE matches_default PARTITION OF matches DEFAULT;

-- Devices: one row per SDK device within an app. first_seen is the install time (the device's
-- earliest event of any kind); install_click_id the attributing click (may arrive later).
CREATE TABLE devices (
    app_id text NOT NULL,
    device_id text NOT NULL,
    first_seen timestamptz NOT NULL,
    platform text,
    install_click_id text,
    first_sdk text,
    PRIMARY KEY (app_id, device_id)
);

-- Links: (app_id, path) seen in clicks.
CREATE TABLE links (
    app_id text NOT NULL,
    path text NOT NULL,
    first_seen timestamptz NOT NULL,
    PRIMARY KEY (app_id, path)
);

-- Where the aggregator has loaded each ingest node's log up to (not app data: keyed by node).
CREATE TABLE load_checkpoints (
    node text PRIMARY KEY,
    segment bigint NOT NULL,
    frame_offset bigint NOT NULL,
    updated_at timestamptz NOT NULL DEFAULT now(),
    loaded_events bigint NOT NULL DEFAULT 0,
    newest_received_at timestamptz
);

-- ensure_day_partitions(parent, from_day, to_day): creates the daily partitions
-- <parent>_pYYYYMMDD for every UTC day in [from_day, to_day] that does not exist yet, in the
-- parent's own schema, moving any rows of those days out of the default partition first.
-- Returns the number of partitions created. Safe to call concurrently (serialised by an advisory
-- transaction lock) and inside the caller's transaction.
CREATE OR REPLACE FUNCTION ensure_day_partitions(parent regclass, from_day date, to_day date)
RETURNS integer
LANGUAGE plpgsql
AS $fn$
DECLARE
    parent_schema text;
    parent_name text;
    default_name text;
    the_day date;
    part_name text;
    lower_bound text;
    upper_bound text;
    created integer := 0;
    moved bigint;
    key_column text;
BEGIN
    IF to_day < from_day THEN
        RETURN 0;
    END IF;
    IF to_day - from_day > 3660 THEN
        RAISE EXCEPTION 'ensure_day_partitions: % days requested, at most 3660', to_day - from_day + 1;
    END IF;
    SELECT n.nspname, c.relname INTO parent_schema, parent_name
    FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
    WHERE c.oid = parent AND c.relkind = 'p';
    IF parent_name IS NULL THEN
        RAISE EXCEPTION 'ensure_day_partitions: % is not a partitioned table', parent;
    END IF;
    SELECT a.attname INTO key_column
    FROM pg_partitioned_table p JOIN pg_attribute a ON a.attrelid = p.partrelid AND a.attnum = p.partattrs[0]
    WHERE p.partrelid = parent;
    PERFORM pg_advisory_xact_lock(hashtext('ensure_day_partitions:' || parent_schema || '.' || parent_name));

    SELECT c.relname INTO default_name
    FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
    WHERE i.inhparent = parent AND pg_get_expr(c.relpartbound, c.oid) = 'DEFAULT';

    the_day := from_day;
    WHILE the_day <= to_day LOOP
        part_name := parent_name || '_p' || to_char(the_day, 'YYYYMMDD');
        IF NOT EXISTS (
            SELECT 1 FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
            WHERE n.nspname = parent_schema AND c.relname = part_name
        ) THEN
            lower_bound := to_char(the_day, 'YYYY-MM-DD') || ' 00:00:00+00';
            upper_bound := to_char(the_day + 1, 'YYYY-MM-DD') || ' 00:00:00+00';
            moved := 0;
            IF default_name IS NOT NULL THEN
                -- Rows of this day already sitting in the default partition (late data) are moved
                -- out first, or creating the partition would fail its check against the default.
                EXECUTE format('SELECT count(*) FROM %I.%I WHERE %I >= %L AND %I < %L',
                    parent_schema, default_name, key_column, lower_bound, key_column, upper_bound)
                INTO moved;
            END IF;
            -- CREATE TABLE + ATTACH PARTITION rather than CREATE TABLE ... PARTITION OF: attaching
            -- takes only SHARE UPDATE EXCLUSIVE on the parent, so readers and writers of the
            -- other partitions are not blocked until the caller commits.
            EXECUTE format('CREATE TABLE %I.%I (LIKE %I.%I INCLUDING DEFAULTS INCLUDING CONSTRAINTS)',
                parent_schema, part_name, parent_schema, parent_name);
            IF moved > 0 THEN
                EXECUTE format(
                    'WITH gone AS (DELETE FROM %I.%I WHERE %I >= %L AND %I < %L RETURNING *)
                     INSERT INTO %I.%I SELECT * FROM gone',
                    parent_schema, default_name, key_column, lower_bound, key_column, upper_bound,
                    parent_schema, part_name);
            END IF;
            EXECUTE format('ALTER TABLE %I.%I ATTACH PARTITION %I.%I FOR VALUES FROM (%L) TO (%L)',
                parent_schema, parent_name, parent_schema, part_name, lower_bound, upper_bound);
            created := created + 1;
        END IF;
        the_day := the_day + 1;
    END LOOP;
    RETURN created;
END
$fn$;

-- The analyst role: read-only access to the report views, granted by the reports migrations.
-- Roles are cluster-wide, so creation tolerates an existing role (and a concurrent creator).
DO $role$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'detour_analyst') THEN
        BEGIN
            CREATE ROLE detour_analyst NOLOGIN;
        EXCEPTION
            WHEN duplicate_object OR unique_violation THEN NULL;
            WHEN insufficient_privilege THEN
                RAISE WARNING 'cannot create role detour_analyst (needs CREATEROLE); create it by hand';
        END;
    END IF;
END
$role$;

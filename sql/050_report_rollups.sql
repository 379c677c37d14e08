-- 050_report_rollups: the rollup tables behind the report views (docs/reports.md), app-defined
-- funnels, and small helpers. Rollups are derived data: refresh_rollups (051) recomputes them per
-- (app, day) key from the raw tables, rebuild_rollups recomputes all of them.
--
-- Days are calendar days in the app's reporting time zone (apps.time_zone), never UTC days
-- (unless the app's zone is UTC). '' stands for "none" in text key columns (primary keys cannot
-- hold NULL); the views turn it back into NULL.

-- App-defined funnels (reports.md "Funnels"). steps are event names in order; 'install' is the
-- device's install; 'click' may only be the first step (then the cohort is the web clicks of a
-- day, joined to the installed device through the click id). The default per-link funnel
-- (funnel_id 'default': click, install, app_open, sign_up, purchase) needs no row.
-- After inserting or changing a funnel, run rebuild_rollups() (or refresh the days concerned).
CREATE TABLE funnels (
    app_id text NOT NULL,
    funnel_id text NOT NULL CHECK (funnel_id ~ '^[A-Za-z0-9_.-]{1,64}$' AND funnel_id <> 'default'),
    name text NOT NULL,
    steps text[] NOT NULL CHECK (
        cardinality(steps) BETWEEN 2 AND 12
        AND array_position(steps, NULL) IS NULL
        AND coalesce(array_position(steps[2:], 'click'), 0) = 0),
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (app_id, funnel_id)
);

-- Every device's install and attribution as the reports define them, derived from the raw tables
-- only (so the reports never depend on how the loader maintains `devices`):
--   install_at       earliest event of any kind; install_day its local day; platform its platform;
--   has_attribution  some event carries an attribution object (else the device is "unattributable");
--   install_click_*  the install_click_id of the device's earliest event carrying one (that
--                    event's time: install_click_event_at), with the click's time and local day
--                    once the click is loaded (NULL before);
--   link_path, utm_* the attributed link: set when that click is loaded and was made at most
--                    apps.install_lookback before the install (and not after it); NULL = organic.
CREATE TABLE rollup_devices (
    app_id text NOT NULL,
    device_id text NOT NULL,
    install_at timestamptz NOT NULL,
    install_day date NOT NULL,
    platform text NOT NULL,
    has_attribution boolean NOT NULL,
    install_click_id text,
    install_click_at timestamptz,
    install_click_day date,
    install_click_event_at timestamptz,
    link_path text,
    utm_source text,
    utm_medium text,
    utm_campaign text,
    PRIMARY KEY (app_id, device_id)
);
-- Cohorts by install day (installs, attributed installs, retention).
CREATE INDEX rollup_devices_install_day ON rollup_devices (app_id, install_day);
-- The device of a click (funnels; re-attribution when a click arrives after the device's events).
CREATE INDEX rollup_devices_install_click ON rollup_devices (app_id, install_click_id)
    WHERE install_click_id IS NOT NULL;

-- Entry of each device into each app-defined funnel whose first step is an event (or install):
-- the first time the device performed step 1. Cohort day = entered_day.
CREATE TABLE rollup_funnel_entries (
    app_id text NOT NULL,
    funnel_id text NOT NULL,
    device_id text NOT NULL,
    entered_at timestamptz NOT NULL,
    entered_day date NOT NULL,
    PRIMARY KEY (app_id, funnel_id, device_id)
);
CREATE INDEX rollup_funnel_entries_day ON rollup_funnel_entries (app_id, funnel_id, entered_day);

-- Per link and day, one row, with the ios/android splits as columns (the views read it without
-- grouping): clicks and universal-link opens (click day, click platform), matched installs (match
-- day, the click's platform), attributed installs (install day, device platform), re-engagements
-- and last-touch opens (event day, device platform).
CREATE TABLE rollup_link_daily (
    app_id text NOT NULL,
    day date NOT NULL,
    path text NOT NULL,
    clicks integer NOT NULL,
    universal_link_opens integer NOT NULL,
    matched_installs integer NOT NULL,
    attributed_installs integer NOT NULL,
    reengagements integer NOT NULL,
    last_touch_opens integer NOT NULL,
    clicks_ios integer NOT NULL,
    clicks_android integer NOT NULL,
    universal_link_opens_ios integer NOT NULL,
    universal_link_opens_android integer NOT NULL,
    matched_installs_ios integer NOT NULL,
    matched_installs_android integer NOT NULL,
    attributed_installs_ios integer NOT NULL,
    attributed_installs_android integer NOT NULL,
    reengagements_ios integer NOT NULL,
    reengagements_android integer NOT NULL,
    PRIMARY KEY (app_id, day, path)
);

-- Click-side counts per link, day and UTM breakdown ('' = parameter absent): clicks and opens by
-- the click's UTM, matched installs by the matched click's, attributed installs by the install
-- click's. Unique by construction (one GROUP BY per key refresh): a plain index on the key
-- prefix is what the deletes and the views' filters need, cheaper than a 6-column primary key.
CREATE TABLE rollup_link_utm_daily (
    app_id text NOT NULL,
    day date NOT NULL,
    path text NOT NULL,
    utm_source text NOT NULL,
    utm_medium text NOT NULL,
    utm_campaign text NOT NULL,
    clicks integer NOT NULL,
    universal_link_opens integer NOT NULL,
    matched_installs integer NOT NULL,
    attributed_installs integer NOT NULL
);
CREATE INDEX rollup_link_utm_daily_day ON rollup_link_utm_daily (app_id, day);

-- Events (actions and retention events) of attributed devices per link, event day, kind and name.
CREATE TABLE rollup_link_events_daily (
    app_id text NOT NULL,
    day date NOT NULL,
    path text NOT NULL,
    kind text NOT NULL,
    name text NOT NULL,
    events integer NOT NULL,
    events_ios integer NOT NULL,
    events_android integer NOT NULL,
    PRIMARY KEY (app_id, day, path, kind, name)
);

-- Revenue (purchase minus refund) of attributed devices per link, event day and currency.
CREATE TABLE rollup_link_revenue_daily (
    app_id text NOT NULL,
    day date NOT NULL,
    path text NOT NULL,
    currency text NOT NULL,
    revenue numeric NOT NULL,
    revenue_ios numeric NOT NULL,
    revenue_android numeric NOT NULL,
    PRIMARY KEY (app_id, day, path, currency)
);

-- Actions of attributed devices by event day AND install day (the cohort view sums over day for a
-- range of install days; keeping the event day makes a new action touch only its own day).
CREATE TABLE rollup_cohort_events_daily (
    app_id text NOT NULL,
    day date NOT NULL,
    install_day date NOT NULL,
    path text NOT NULL,
    name text NOT NULL,
    events integer NOT NULL
);
CREATE INDEX rollup_cohort_events_daily_day ON rollup_cohort_events_daily (app_id, day);
CREATE INDEX rollup_cohort_events_daily_install ON rollup_cohort_events_daily (app_id, install_day);

-- Revenue of attributed devices by event day and install day, per currency.
CREATE TABLE rollup_cohort_revenue_daily (
    app_id text NOT NULL,
    day date NOT NULL,
    install_day date NOT NULL,
    path text NOT NULL,
    currency text NOT NULL,
    revenue numeric NOT NULL
);
CREATE INDEX rollup_cohort_revenue_daily_day ON rollup_cohort_revenue_daily (app_id, day);
CREATE INDEX rollup_cohort_revenue_daily_install ON rollup_cohort_revenue_daily (app_id, install_day);

-- Installs per install day, link ('' = organic), platform and whether the device is unattributable.
CREATE TABLE rollup_installs_daily (
    app_id text NOT NULL,
    day date NOT NULL,
    path text NOT NULL,
    platform text NOT NULL,
    unattributable boolean NOT NULL,
    installs integer NOT NULL,
    PRIMARY KEY (app_id, day, path, platform, unattributable)
);

-- Retention, by activity day: devices of cohort install_day (link '' = organic) with an app_open
-- on `day`, for day - install_day in (1, 3, 7, 14, 30).
CREATE TABLE rollup_retention_daily (
    app_id text NOT NULL,
    day date NOT NULL,
    install_day date NOT NULL,
    path text NOT NULL,
    returned integer NOT NULL,
    PRIMARY KEY (app_id, day, install_day, path)
);
CREATE INDEX rollup_retention_daily_cohort ON rollup_retention_daily (app_id, install_day);

-- Funnels per cohort day (day of step 1): one row per link and step, also for steps nobody reached
-- (devices 0), with the devices of the previous and of the first step (the views divide without
-- joining) and the median time from the previous step.
CREATE TABLE rollup_funnel_daily (
    app_id text NOT NULL,
    funnel_id text NOT NULL,
    day date NOT NULL,
    path text NOT NULL,
    step integer NOT NULL,
    step_name text NOT NULL,
    devices integer NOT NULL,
    devices_previous integer,
    devices_first integer NOT NULL,
    median_from_previous interval,
    PRIMARY KEY (app_id, day, funnel_id, path, step)
);


-- Per app: the newest event time loaded. Retention caps "day N reached" at the app-local date of
-- the older of this and the load watermark, so a history loaded today (a backfill, a simulated
-- month) does not report zeros for days its data never reached.
CREATE TABLE rollup_apps (
    app_id text PRIMARY KEY,
    newest_event_at timestamptz NOT NULL
);

-- Clicks by id: one row per loaded click with the dimensions the reports need (its link, local day,
-- platform, UTM), so joins from matches, install clicks and open clicks are one index probe each
-- instead of a probe into every daily partition of `clicks`.
CREATE TABLE rollup_clicks (
    app_id text NOT NULL,
    click_id text NOT NULL,
    click_time timestamptz NOT NULL,
    click_day date NOT NULL,
    path text NOT NULL,
    platform text NOT NULL,
    click_kind text NOT NULL,
    utm_source text NOT NULL,
    utm_medium text NOT NULL,
    utm_campaign text NOT NULL,
    PRIMARY KEY (app_id, click_id)
);

-- An app's report settings, with the documented defaults when the app has no row.
CREATE FUNCTION rollup_settings(p_app text, OUT time_zone text, OUT install_lookback interval,
    OUT reengagement_inactivity interval, OUT conversion_window interval)
LANGUAGE sql STABLE AS $fn$
    SELECT coalesce(max(a.time_zone), 'UTC'), coalesce(max(a.install_lookback), interval '7 days'),
           coalesce(max(a.reengagement_inactivity), interval '7 days'), coalesce(max(a.conversion_window), interval '7 days')
    FROM apps a WHERE a.id = p_app
$fn$;

-- Revenue of an action from its free-form data (wire-format.md): `revenue`, else `value`, a JSON
-- number (or a numeric string) in major units; NULL when neither is usable.
CREATE FUNCTION report_revenue_amount(p_data jsonb) RETURNS numeric
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $fn$
    SELECT CASE
        WHEN jsonb_typeof(p_data) <> 'object' THEN NULL
        WHEN jsonb_typeof(p_data -> 'revenue') = 'number' THEN (p_data ->> 'revenue')::numeric
        WHEN jsonb_typeof(p_data -> 'revenue') = 'string' AND p_data ->> 'revenue' ~ '^\s*-?[0-9]+(\.[0-9]+)?\s*$'
            THEN trim(p_data ->> 'revenue')::numeric
        WHEN jsonb_typeof(p_data -> 'value') = 'number' THEN (p_data ->> 'value')::numeric
        WHEN jsonb_typeof(p_data -> 'value') = 'string' AND p_data ->> 'value' ~ '^\s*-?[0-9]+(\.[0-9]+)?\s*$'
            THEN trim(p_data ->> 'value')::numeric
    END
$fn$;

-- The ISO 4217 currency of an action's revenue, upper-cased; 'XXX' (ISO's "no currency") when absent
-- or not three letters, so amounts without a currency are never mixed with any real currency.
CREATE FUNCTION report_revenue_currency(p_data jsonb) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $fn$
    SELECT CASE
        WHEN jsonb_typeof(p_data) = 'object' AND p_data ->> 'currency' ~ '^[A-Za-z]{3}$' THEN upper(p_data ->> 'currency')
        ELSE 'XXX'
    END
$fn$;

-- The instant a local calendar day starts in a time zone (DST-correct: a day may be 23 or 25 hours).
CREATE FUNCTION report_day_start(p_day date, p_time_zone text) RETURNS timestamptz
LANGUAGE sql STABLE PARALLEL SAFE AS $fn$
    SELECT p_day::timestamp AT TIME ZONE p_time_zone
$fn$;

-- Late actions by their open click (re-engagements and last-touch opens when the click arrives
-- after the actions that carry it). Partial: only actions opened through a link.
CREATE INDEX events_app_open_click ON events (app_id, open_click_id) WHERE open_click_id IS NOT NULL;

-- Every day boundary depends on apps.time_zone, and a name PostgreSQL does not know would make
-- every rollup refresh of the app fail (and with it the load transaction that calls it). Refuse
-- such names when an app is created or changed. NOT VALID: existing rows are not re-checked.
CREATE FUNCTION report_is_time_zone(p_name text) RETURNS boolean
LANGUAGE plpgsql IMMUTABLE AS $fn$
BEGIN
    PERFORM timestamptz '2000-01-01 00:00:00+00' AT TIME ZONE p_name;
    RETURN true;
EXCEPTION WHEN invalid_parameter_value OR data_exception THEN
    RETURN false;
END
$fn$;
ALTER TABLE apps ADD CONSTRAINT apps_time_zone_known CHECK (report_is_time_zone(time_zone)) NOT VALID;

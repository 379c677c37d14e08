-- 066_link_summary_platform_splits: the per-link report's events and revenue split by platform.
--
-- reports.md's per-link daily report splits "the same counts" by ios / android. The views had the
-- split for every column (report_link_daily_events.events_ios, report_link_daily_revenue.revenue_ios,
-- ...), but rollup_link_summary, which `report links`, the API and the daily job read, carried it
-- only for clicks, universal-link opens, matched installs, attributed installs and re-engagements:
-- the events and revenue of the report had no platform split. Six arrays, parallel to event_names,
-- retention_names and revenue_currencies, now hold it, packed for the reader in `platform_line`.
-- Only ios and android get arrays; other platforms count in the totals, as elsewhere.

ALTER TABLE rollup_link_summary
    ADD COLUMN event_counts_ios integer[] NOT NULL DEFAULT '{}',
    ADD COLUMN event_counts_android integer[] NOT NULL DEFAULT '{}',
    ADD COLUMN retention_counts_ios integer[] NOT NULL DEFAULT '{}',
    ADD COLUMN retention_counts_android integer[] NOT NULL DEFAULT '{}',
    ADD COLUMN revenue_amounts_ios text[] NOT NULL DEFAULT '{}',
    ADD COLUMN revenue_amounts_android text[] NOT NULL DEFAULT '{}';

-- As 054's, with the split arrays (and a column list, so the table's column order no longer matters).
CREATE OR REPLACE FUNCTION rollup_refresh_link_summary(p_app text, p_day date) RETURNS void
LANGUAGE sql AS $fn$
    DELETE FROM rollup_link_summary WHERE app_id = p_app AND day = p_day;
    INSERT INTO rollup_link_summary (
        app_id, day, path, clicks, universal_link_opens, matched_installs, attributed_installs, reengagements,
        clicks_ios, clicks_android, universal_link_opens_ios, universal_link_opens_android, matched_installs_ios,
        matched_installs_android, attributed_installs_ios, attributed_installs_android, reengagements_ios,
        reengagements_android, event_names, event_counts, retention_names, retention_counts, revenue_currencies,
        revenue_amounts, utm_sources, utm_mediums, utm_campaigns, utm_clicks, utm_universal_link_opens,
        utm_matched_installs, utm_attributed_installs, utm_install_rates, event_counts_ios, event_counts_android,
        retention_counts_ios, retention_counts_android, revenue_amounts_ios, revenue_amounts_android)
    SELECT p_app, p_day, k.path,
           coalesce(l.clicks, 0), coalesce(l.universal_link_opens, 0), coalesce(l.matched_installs, 0),
           coalesce(l.attributed_installs, 0), coalesce(l.reengagements, 0),
           coalesce(l.clicks_ios, 0), coalesce(l.clicks_android, 0), coalesce(l.universal_link_opens_ios, 0),
           coalesce(l.universal_link_opens_android, 0), coalesce(l.matched_installs_ios, 0),
           coalesce(l.matched_installs_android, 0), coalesce(l.attributed_installs_ios, 0),
           coalesce(l.attributed_installs_android, 0), coalesce(l.reengagements_ios, 0),
           coalesce(l.reengagements_android, 0),
           coalesce(e.event_names, '{}'), coalesce(e.event_counts, '{}'),
           coalesce(e.retention_names, '{}'), coalesce(e.retention_counts, '{}'),
           coalesce(v.currencies, '{}'), coalesce(v.amounts, '{}'),
           coalesce(u.sources, '{}'), coalesce(u.mediums, '{}'), coalesce(u.campaigns, '{}'),
           coalesce(u.clicks, '{}'), coalesce(u.opens, '{}'), coalesce(u.matched, '{}'),
           coalesce(u.attributed, '{}'), coalesce(u.rates, '{}'),
           coalesce(e.event_counts_ios, '{}'), coalesce(e.event_counts_android, '{}'),
           coalesce(e.retention_counts_ios, '{}'), coalesce(e.retention_counts_android, '{}'),
           coalesce(v.amounts_ios, '{}'), coalesce(v.amounts_android, '{}')
    FROM (
        SELECT r.path FROM rollup_link_daily r
        WHERE r.app_id = p_app AND r.day = p_day
          AND r.clicks + r.universal_link_opens + r.matched_installs + r.attributed_installs + r.reengagements > 0
        UNION
        SELECT r.path FROM rollup_link_events_daily r WHERE r.app_id = p_app AND r.day = p_day
        UNION
        SELECT r.path FROM rollup_link_revenue_daily r WHERE r.app_id = p_app AND r.day = p_day
    ) k
    LEFT JOIN rollup_link_daily l
        ON l.app_id = p_app AND l.day = p_day AND l.path = k.path
       AND l.clicks + l.universal_link_opens + l.matched_installs + l.attributed_installs + l.reengagements > 0
    LEFT JOIN (
        SELECT r.path,
               array_agg(r.name ORDER BY r.name) FILTER (WHERE r.kind = 'event') AS event_names,
               array_agg(r.events ORDER BY r.name) FILTER (WHERE r.kind = 'event') AS event_counts,
               array_agg(r.events_ios ORDER BY r.name) FILTER (WHERE r.kind = 'event') AS event_counts_ios,
               array_agg(r.events_android ORDER BY r.name) FILTER (WHERE r.kind = 'event') AS event_counts_android,
               array_agg(r.name ORDER BY r.name) FILTER (WHERE r.kind <> 'event') AS retention_names,
               array_agg(r.events ORDER BY r.name) FILTER (WHERE r.kind <> 'event') AS retention_counts,
               array_agg(r.events_ios ORDER BY r.name) FILTER (WHERE r.kind <> 'event') AS retention_counts_ios,
               array_agg(r.events_android ORDER BY r.name) FILTER (WHERE r.kind <> 'event') AS retention_counts_android
        FROM rollup_link_events_daily r WHERE r.app_id = p_app AND r.day = p_day
        GROUP BY r.path
    ) e ON e.path = k.path
    LEFT JOIN (
        SELECT r.path, array_agg(r.currency ORDER BY r.currency) AS currencies,
               array_agg(r.revenue::text ORDER BY r.currency) AS amounts,
               array_agg(r.revenue_ios::text ORDER BY r.currency) AS amounts_ios,
               array_agg(r.revenue_android::text ORDER BY r.currency) AS amounts_android
        FROM rollup_link_revenue_daily r WHERE r.app_id = p_app AND r.day = p_day
        GROUP BY r.path
    ) v ON v.path = k.path
    LEFT JOIN (
        SELECT r.path,
               array_agg(r.utm_source ORDER BY r.utm_source, r.utm_medium, r.utm_campaign) AS sources,
               array_agg(r.utm_medium ORDER BY r.utm_source, r.utm_medium, r.utm_campaign) AS mediums,
               array_agg(r.utm_campaign ORDER BY r.utm_source, r.utm_medium, r.utm_campaign) AS campaigns,
               array_agg(r.clicks ORDER BY r.utm_source, r.utm_medium, r.utm_campaign) AS clicks,
               array_agg(r.universal_link_opens ORDER BY r.utm_source, r.utm_medium, r.utm_campaign) AS opens,
               array_agg(r.matched_installs ORDER BY r.utm_source, r.utm_medium, r.utm_campaign) AS matched,
               array_agg(r.attributed_installs ORDER BY r.utm_source, r.utm_medium, r.utm_campaign) AS attributed,
               array_agg(coalesce(CASE WHEN r.clicks > 0 THEN round(r.matched_installs::numeric / r.clicks, 6)::text END, '')
                         ORDER BY r.utm_source, r.utm_medium, r.utm_campaign) AS rates
        FROM rollup_link_utm_daily r WHERE r.app_id = p_app AND r.day = p_day
        GROUP BY r.path
    ) u ON u.path = k.path;
$fn$;

-- The split arrays are packed beside the line (055), not appended to it: a binary from before this
-- migration reads `line` and checks that it ends where it expects, so during an upgrade (migrate
-- run, the old `serve` still answering reports) its reads keep working. Set on every write, as the
-- line is, by a trigger of its own.
ALTER TABLE rollup_link_summary ADD COLUMN platform_line text;

CREATE FUNCTION rollup_link_summary_set_platform_line() RETURNS trigger
LANGUAGE plpgsql AS $fn$
BEGIN
    NEW.platform_line := concat(
        NEW.event_counts_ios, NEW.event_counts_android, NEW.retention_counts_ios, NEW.retention_counts_android,
        NEW.revenue_amounts_ios, NEW.revenue_amounts_android);
    RETURN NEW;
END
$fn$;

CREATE TRIGGER rollup_link_summary_platform_line BEFORE INSERT OR UPDATE ON rollup_link_summary
    FOR EACH ROW EXECUTE FUNCTION rollup_link_summary_set_platform_line();

-- Existing rows: the split arrays from the same rollups, in the same order as the names and
-- currencies; the trigger writes each row's platform_line.
UPDATE rollup_link_summary s
SET event_counts_ios = coalesce(e.event_counts_ios, '{}'), event_counts_android = coalesce(e.event_counts_android, '{}'),
    retention_counts_ios = coalesce(e.retention_counts_ios, '{}'),
    retention_counts_android = coalesce(e.retention_counts_android, '{}'),
    revenue_amounts_ios = coalesce(v.amounts_ios, '{}'), revenue_amounts_android = coalesce(v.amounts_android, '{}')
FROM rollup_link_summary k
LEFT JOIN (
    SELECT r.app_id, r.day, r.path,
           array_agg(r.events_ios ORDER BY r.name) FILTER (WHERE r.kind = 'event') AS event_counts_ios,
           array_agg(r.events_android ORDER BY r.name) FILTER (WHERE r.kind = 'event') AS event_counts_android,
           array_agg(r.events_ios ORDER BY r.name) FILTER (WHERE r.kind <> 'event') AS retention_counts_ios,
           array_agg(r.events_android ORDER BY r.name) FILTER (WHERE r.kind <> 'event') AS retention_counts_android
    FROM rollup_link_events_daily r
    GROUP BY r.app_id, r.day, r.path
) e ON e.app_id = k.app_id AND e.day = k.day AND e.path = k.path
LEFT JOIN (
    SELECT r.app_id, r.day, r.path, array_agg(r.revenue_ios::text ORDER BY r.currency) AS amounts_ios,
           array_agg(r.revenue_android::text ORDER BY r.currency) AS amounts_android
    FROM rollup_link_revenue_daily r
    GROUP BY r.app_id, r.day, r.path
) v ON v.app_id = k.app_id AND v.day = k.day AND v.path = k.path
WHERE s.app_id = k.app_id AND s.day = k.day AND s.path = k.path;
ALTER TABLE rollup_link_summary ALTER COLUMN platform_line SET NOT NULL;

-- The reader's view gets the new column at its end (an older reader selects `line` by name).
CREATE OR REPLACE VIEW report_link_summary_lines AS
SELECT r.app_id, r.day, r.line, r.platform_line FROM rollup_link_summary r;

-- The split arrays at the end of the view (CREATE OR REPLACE keeps its grants).
CREATE OR REPLACE VIEW report_link_summary AS
SELECT r.app_id, r.path, r.day, r.clicks::bigint AS clicks, r.universal_link_opens::bigint AS universal_link_opens,
       r.matched_installs::bigint AS matched_installs, r.attributed_installs::bigint AS attributed_installs,
       CASE WHEN r.clicks > 0 THEN round(r.matched_installs::numeric / r.clicks, 6) END AS install_rate,
       r.reengagements::bigint AS reengagements,
       r.clicks_ios::bigint AS clicks_ios, r.clicks_android::bigint AS clicks_android,
       r.universal_link_opens_ios::bigint AS universal_link_opens_ios,
       r.universal_link_opens_android::bigint AS universal_link_opens_android,
       r.matched_installs_ios::bigint AS matched_installs_ios,
       r.matched_installs_android::bigint AS matched_installs_android,
       r.attributed_installs_ios::bigint AS attributed_installs_ios,
       r.attributed_installs_android::bigint AS attributed_installs_android,
       r.reengagements_ios::bigint AS reengagements_ios, r.reengagements_android::bigint AS reengagements_android,
       r.event_names, r.event_counts, r.retention_names, r.retention_counts, r.revenue_currencies, r.revenue_amounts,
       r.utm_sources, r.utm_mediums, r.utm_campaigns, r.utm_clicks, r.utm_universal_link_opens,
       r.utm_matched_installs, r.utm_attributed_installs, r.utm_install_rates,
       r.event_counts_ios, r.event_counts_android, r.retention_counts_ios, r.retention_counts_android,
       r.revenue_amounts_ios, r.revenue_amounts_android
FROM rollup_link_summary r;

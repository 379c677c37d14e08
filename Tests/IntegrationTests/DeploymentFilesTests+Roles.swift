import Foundation
import Postgres
import TestSupport
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The compose deployment's database roles without Docker: the very script compose mounts into the
/// postgres image (deploy/postgres-init.sh) runs against the test PostgreSQL, in a database of its
/// own and with role names of its own; then `migrate` runs as the owner and the pipeline as the
/// runtime role, the way docker-compose.yml wires them (docs/schema.md, "Roles").
extension DeploymentFilesTests {
    @Test("a fresh deployment: migrate runs as the owner, the pipeline loads and reports as detour_writer")
    func rolesOnAFreshDatabase() throws {
        let roles = try ComposeRoles.make()
        defer { roles.drop() }
        try setUpDeployment(roles)
        try exercisePipeline(roles)
        try expectNothingOwnedByOthers(roles)
        try expectRefusals(roles)
        try expectDatabaseGrants(roles)
    }

    /// A deployment made before the roles: every migration ran as the image's superuser, which owns
    /// every object (and, the bootstrap superuser, cannot be REASSIGNed OWNED). The script run by hand
    /// gives the schema to the owner; the next `migrate` (as the owner) applies the rest.
    @Test("an existing deployment: the init script run once hands the superuser's schema to the owner")
    func rolesOnAnExistingDatabase() throws {
        let roles = try ComposeRoles.make()
        defer { roles.drop() }
        let old = try TemporaryDirectory()
        let files = try FileManager.default.contentsOfDirectory(atPath: root + "/sql").filter { $0.hasSuffix(".sql") }
        for file in files where (Int(file.prefix(3)) ?? 0) < 72 {
            try FileManager.default.copyItem(atPath: root + "/sql/" + file, toPath: old.path + "/" + file)
        }
        let superuser = ["DATABASE_URL": roles.superuserURL]
        let before = try PipelineProcess.runToEnd(["migrate", "--sql-dir", old.path], environment: superuser)
        #expect(before.status == 0, "migrate as the superuser failed: \(before.errors)")
        _ = try PipelineProcess.createApp(id: "old-app", name: "Made before the roles", environment: superuser)
        let admin = try Connection(url: roles.superuserURL)
        defer { admin.close() }
        _ = try admin.query("SELECT ensure_day_partitions('events', current_date - 1, current_date + 2)")

        for run in 1...2 {  // the second run finds nothing left to do and succeeds all the same
            let result = try roles.runInitScript()
            #expect(result.status == 0, "postgres-init.sh (run \(run)) failed: \(result.output)")
        }
        try expectNothingOwnedByOthers(roles)
        let migrated = try PipelineProcess.runToEnd(
            ["migrate", "--sql-dir", root + "/sql"], environment: ["DATABASE_URL": roles.ownerURL])
        #expect(migrated.status == 0, "migrate as the owner failed: \(migrated.errors)")
        #expect(migrated.output.contains("072_writer_role"))
        try exercisePipeline(roles)
        try expectRefusals(roles)
        try expectDatabaseGrants(roles)
    }

    /// Two deployments on one cluster share detour_writer and detour_analyst (cluster-wide roles with
    /// fixed names, granted to by every detour database's migrations), so a pipeline login holds the
    /// writer's privileges in the other deployment's database too: what keeps it out is CONNECT, which
    /// the script revokes from PUBLIC and gives to the deployment's own two logins alone.
    @Test("two deployments on one cluster: neither's logins may connect to the other's database")
    func rolesOfTwoDeployments() throws {
        let first = try ComposeRoles.make()
        defer { first.drop() }
        let second = try ComposeRoles.make()
        defer { second.drop() }
        for roles in [first, second] {
            try setUpDeployment(roles)
            try exercisePipeline(roles)
        }
        // The first was set up by the script before 2026-12-02, which granted CONNECT and TEMPORARY
        // to detour_writer by name (and left PUBLIC's): running the script again is the upgrade.
        let admin = try Connection(url: first.superuserURL)
        defer { admin.close() }
        try admin.execute(
            "GRANT CONNECT, TEMPORARY ON DATABASE \(identifier: first.database) TO PUBLIC, detour_writer")
        for roles in [first, second] {
            let again = try roles.runInitScript()
            #expect(again.status == 0, "postgres-init.sh (again) failed: \(again.output)")
            try expectDatabaseGrants(roles)
        }
        for (roles, other) in [(first, second), (second, first)] {
            for url in roles.loginURLs(database: other.database) {
                expectConnectRefused(url, database: other.database)
            }
            // Its own database still takes it, temporary tables included (the loader's).
            let own = try Connection(url: roles.pipelineURL)
            defer { own.close() }
            try own.unsafeSQL("CREATE TEMP TABLE probe (a int); SELECT count(*) FROM events")
        }
        try expectAnalystLogin(first)
    }

    @Test(
        "grant_writer_privileges() gives detour_writer 072's privileges again, for a role made after migrate skipped them"
    )
    func writerGrantsRerun() throws {
        let database = try TestDatabase.make()
        defer { database.drop() }
        let connection = try database.connect()
        defer { connection.close() }
        // What 072 leaves when detour_writer did not exist yet (a schema owner without CREATEROLE):
        // no grant in this schema. Until 2026-12-02 nothing could give them back once the role was
        // made: migrate again said "schema is up to date".
        let schema = try connection.query("SELECT current_schema() AS s").first!["s", as: String.self]
        try connection.unsafeSQL(
            """
            REVOKE ALL ON ALL TABLES IN SCHEMA "\(schema)" FROM detour_writer;
            REVOKE ALL ON SCHEMA "\(schema)" FROM detour_writer;
            REVOKE ALL ON ALL FUNCTIONS IN SCHEMA "\(schema)" FROM detour_writer
            """)
        let check: SQL = """
            SELECT has_table_privilege('detour_writer', 'events', 'INSERT') AS events,
                   has_table_privilege('detour_writer', 'rollup_devices', 'DELETE') AS rollups,
                   has_table_privilege('detour_writer', 'report_watermark', 'SELECT') AS views,
                   has_table_privilege('detour_writer', 'apps', 'INSERT') AS apps,
                   has_function_privilege('detour_writer', 'ensure_day_partitions(regclass, date, date)', 'EXECUTE') AS partitions
            """
        let before = try connection.query(check).first!
        #expect(try !before["events", as: Bool.self] && !before["rollups", as: Bool.self])
        // The owner runs it (under any search_path: it grants in the schema it was made in).
        try connection.unsafeSQL("SET search_path = pg_catalog")
        let granted = try connection.query("SELECT \(identifier: schema).grant_writer_privileges() AS g")
        #expect(try granted.first?["g", as: Bool.self] == true)
        try connection.unsafeSQL("SET search_path = \"\(schema)\"")
        let after = try connection.query(check).first!
        #expect(try after["events", as: Bool.self])
        #expect(try after["rollups", as: Bool.self])
        #expect(try after["views", as: Bool.self])
        #expect(try !after["apps", as: Bool.self])
        #expect(try after["partitions", as: Bool.self])
    }

    /// The guard for later migrations: a table or view the pipeline uses and nobody granted to
    /// detour_writer fails only in a deployment with the roles (every other test connects as the
    /// superuser), so every relation must be granted exactly what sql/072 says or be listed here.
    @Test("detour_writer holds exactly the privileges sql/072 lists, on every relation of the schema")
    func writerPrivileges() throws {
        let database = try TestDatabase.make()
        defer { database.drop() }
        let connection = try database.connect()
        defer { connection.close() }
        let read = "SELECT"
        let append = "SELECT, INSERT"
        let maintain = "SELECT, INSERT, UPDATE"
        let rewrite = "SELECT, INSERT, UPDATE, DELETE"
        let expected: [String: String] = [
            "apps": read, "api_keys": read, "funnels": read, "schema_migrations": "",
            "events": append, "clicks": append, "matches": append,
            "event_ids": append, "click_ids": append, "match_ids": append,
            "devices": maintain, "links": maintain, "load_checkpoints": maintain,
            "aggregator_pending_utc_days": rewrite,
        ]
        let rows = try connection.query(
            """
            SELECT c.relname, c.relkind::text AS kind,
                   concat_ws(', ',
                       CASE WHEN has_table_privilege('detour_writer', c.oid, 'SELECT') THEN 'SELECT' END,
                       CASE WHEN has_table_privilege('detour_writer', c.oid, 'INSERT') THEN 'INSERT' END,
                       CASE WHEN has_table_privilege('detour_writer', c.oid, 'UPDATE') THEN 'UPDATE' END,
                       CASE WHEN has_table_privilege('detour_writer', c.oid, 'DELETE') THEN 'DELETE' END,
                       CASE WHEN has_table_privilege('detour_writer', c.oid, 'TRUNCATE') THEN 'TRUNCATE' END,
                       CASE WHEN has_table_privilege('detour_writer', c.oid, 'REFERENCES') THEN 'REFERENCES' END,
                       CASE WHEN has_table_privilege('detour_writer', c.oid, 'TRIGGER') THEN 'TRIGGER' END) AS granted
            FROM pg_class c
            WHERE c.relnamespace = current_schema()::regnamespace AND c.relkind IN ('r', 'p', 'v', 'm', 'S', 'f')
              AND NOT c.relispartition
            ORDER BY c.relname
            """)
        #expect(rows.count > 60)
        for row in rows {
            let name = try row["relname", as: String.self]
            let kind = try row["kind", as: String.self]
            let granted = try row["granted", as: String.self]
            let wanted =
                expected[name]
                ?? (kind == "r" && name.hasPrefix("rollup_")
                    ? rewrite : kind == "v" && name.hasPrefix("report_") ? read : nil)
            #expect(
                wanted == granted,
                "\(name) grants detour_writer [\(granted)]; give it what the pipeline does with it (sql/072) or list it here"
            )
        }
        // A partition is reached through its parent: nothing on it directly.
        let partition = try connection.query(
            "SELECT has_table_privilege('detour_writer', 'events_default', 'SELECT') AS p"
        ).first?["p", as: Bool.self]
        #expect(partition == false)

        // The functions that run as their owner: exactly these, with a search_path of their own, and
        // not executable by PUBLIC (the analyst cannot call them). CREATE OR REPLACE resets both.
        let definers = try connection.query(
            """
            SELECT p.proname, array_to_string(p.proconfig, ';') AS config,
                   has_function_privilege('detour_writer', p.oid, 'EXECUTE') AS writer,
                   has_function_privilege('detour_analyst', p.oid, 'EXECUTE') AS analyst
            FROM pg_proc p WHERE p.pronamespace = current_schema()::regnamespace AND p.prosecdef
            ORDER BY p.proname
            """)
        #expect(try definers.map { try $0["proname", as: String.self] } == ["ensure_day_partitions", "rollup_analyze"])
        for row in definers {
            #expect(try row["config", as: String?.self] == "search_path=pg_catalog, pg_temp")
            #expect(try row["writer", as: Bool.self])
            #expect(try !row["analyst", as: Bool.self])
        }
    }

    /// A fresh deployment's setup: the init script, then every migration as the owner.
    private func setUpDeployment(_ roles: ComposeRoles) throws {
        let script = try roles.runInitScript()
        #expect(script.status == 0, "postgres-init.sh failed: \(script.output)")
        let migrated = try PipelineProcess.runToEnd(
            ["migrate", "--sql-dir", root + "/sql"], environment: ["DATABASE_URL": roles.ownerURL])
        #expect(migrated.status == 0, "migrate as the owner failed: \(migrated.errors)")
    }

    /// Runs the pipeline as the runtime role against `roles`' database: events of three days, clicks
    /// and a match posted over HTTP, loaded (a day created after its rows arrived, so they move out of
    /// the default partition), rolled up and read back through the report API; then the daily report
    /// and a rebuild, each as that role. Nothing may fail for want of a privilege.
    private func exercisePipeline(_ roles: ComposeRoles) throws {
        let admin = ["DATABASE_URL": roles.ownerURL]
        let app = "roles-app"
        let keys = try PipelineProcess.createApp(id: app, name: "Least privilege", environment: admin)
        let publishable = try #require(keys["publishable_key"])
        let secret = try #require(keys["secret_key"])
        let data = try TemporaryDirectory()
        let environment = ["DATABASE_URL": roles.pipelineURL, "DETOUR_DATA_DIR": data.path]
        let pipeline = try PipelineProcess(
            ["run", "--http-addr", "127.0.0.1:0", "--load-interval", "200ms", "--rollup-interval", "0"],
            environment: environment)
        defer { pipeline.signal(SIGKILL) }
        let base = try #require(
            pipeline.waitForLine(startingWith: "listening on "), "no listening line; log: \(pipeline.standardError)")

        let day = 86_400.0
        let iso = ISO8601DateFormatter()
        iso.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        let now = Date()
        func at(_ offset: Double) -> String { iso.string(from: now.addingTimeInterval(offset)) }
        let sdk = ["Authorization": "Bearer \(publishable)", "X-App-ID": app]
        #expect(
            try HTTP.postJSON(
                base + "/api/link/events",
                body: #"{"clicks":[{"click_id":"clk_r1","url":"https://acme.godetour.link/R/promo?utm_source=news","#
                    + #""timestamp":"\#(at(-2 * day))","platform":"ios","kind":"web"}],"#
                    + #""matches":[{"click_id":"clk_r1","timestamp":"\#(at(-2 * day + 60))","method":"deterministic"}]}"#,
                headers: ["Authorization": "Bearer \(secret)", "X-App-ID": app]) == 200)
        for (device, offset) in [("dev-r1", -2 * day + 120), ("dev-r2", -day), ("dev-r3", 0)] {
            let retention =
                #"{"event_name":"app_open","timestamp":"\#(at(offset))","platform":"ios","device_id":"\#(device)","#
                + #""install_click_id":"clk_r1"}"#
            #expect(try HTTP.postJSON(base + "/api/analytics/retention", body: retention, headers: sdk) == 200)
            let purchase =
                #"{"event_name":"purchase","data":{"revenue":9.5,"currency":"EUR"},"timestamp":"\#(at(offset + 30))","#
                + #""platform":"android","device_id":"\#(device)"}"#
            #expect(try HTTP.postJSON(base + "/api/analytics/event", body: purchase, headers: sdk) == 200)
        }

        // Loaded and rolled up: every row in, the click counted in the link rollups, no work queued,
        // and nothing left in a default partition (the day two days back got its partition after its
        // rows had arrived, and ensure_day_partitions, running as its owner, moved them there).
        let owner = try Connection(url: roles.ownerURL)
        defer { owner.close() }
        var state = ""
        let deadline = ContinuousClock.now + .seconds(60)
        while ContinuousClock.now < deadline {
            state =
                try owner.query(
                    """
                    SELECT (SELECT count(*) FROM events)::text || ' events, '
                           || (SELECT count(*) FROM clicks)::text || ' clicks, '
                           || (SELECT count(*) FROM matches)::text || ' matches, '
                           || (SELECT coalesce(sum(clicks), 0) FROM report_link_daily)::text || ' clicks rolled up, '
                           || (SELECT count(*) FROM rollup_pending_keys)::text || ' pending, '
                           || ((SELECT count(*) FROM events_default) + (SELECT count(*) FROM clicks_default)
                               + (SELECT count(*) FROM matches_default))::text || ' in default partitions' AS state
                    """
                ).first?["state", as: String.self] ?? ""
            if state == "6 events, 1 clicks, 1 matches, 1 clicks rolled up, 0 pending, 0 in default partitions" {
                break
            }
            Thread.sleep(forTimeInterval: 0.2)
        }
        #expect(
            state == "6 events, 1 clicks, 1 matches, 1 clicks rolled up, 0 pending, 0 in default partitions",
            "log: \(pipeline.standardError)")
        // The rollup pass analysed today's new partition (sql/065) though the runtime role does not
        // own it: through rollup_analyze. Skipped, its reltuples would still be -1 (never analysed).
        let today = "events_p" + at(0).prefix(10).replacingOccurrences(of: "-", with: "")
        let reltuples = try owner.query("SELECT reltuples::float8 AS n FROM pg_class WHERE oid = \(today)::regclass")
            .first?["n", as: Double.self]
        #expect((reltuples ?? -1) >= 0, "\(today) was never analysed")

        let links = try HTTP.get(
            base + "/api/reports/links", headers: ["Authorization": "Bearer \(secret)", "X-App-ID": app])
        #expect(links.status == 200 && links.text.contains(#""path":"/promo""#), "report API: \(links.text)")

        pipeline.signal(SIGTERM)
        #expect(pipeline.waitForExit(timeout: .seconds(30)) == 0)
        #expect(!pipeline.standardError.contains("42501"), "a privilege was missing: \(pipeline.standardError)")
        #expect(!pipeline.standardError.contains("permission denied"), "\(pipeline.standardError)")

        let reports = try TemporaryDirectory()
        let date = String(at(-2 * day).prefix(10))
        let daily = try PipelineProcess.runToEnd(
            ["report", "daily", "--date", date, "--out", reports.path], environment: environment)
        #expect(daily.status == 0, "report daily as the runtime role: \(daily.errors)")
        #expect(FileManager.default.fileExists(atPath: "\(reports.path)/\(date)/\(app)/report.json"))
        try expectRebuildAnalyses(roles, environment: environment)
    }

    /// `report rebuild` as the runtime role analyses the tables it has just filled (sql/074, through
    /// rollup_analyze), and `rebuild_rollups()` raises no warning. Its direct ANALYZEs were skipped
    /// with one ("only table or database owner can analyze it") and the per-day loop was planned
    /// against the statistics of the tables it had emptied.
    private func expectRebuildAnalyses(_ roles: ComposeRoles, environment: [String: String]) throws {
        let tables = [
            "rollup_clicks", "rollup_devices", "rollup_funnel_entries", "rollup_link_daily",
            "rollup_link_events_daily", "rollup_cohort_events_daily", "rollup_funnel_daily",
            "rollup_cohort_events_total",
        ]
        let owner = try Connection(url: roles.ownerURL)
        defer { owner.close() }
        func analyses() throws -> [String: Int] {
            let rows = try owner.query(
                """
                SELECT relname::text AS t, analyze_count AS n FROM pg_stat_user_tables
                WHERE schemaname = 'public' AND relname::text = ANY(\(tables)::text[])
                """)
            return Dictionary(
                uniqueKeysWithValues: try rows.map { (try $0["t", as: String.self], try $0["n", as: Int.self]) })
        }
        let before = try analyses()
        let rebuild = try PipelineProcess.runToEnd(["report", "rebuild"], environment: environment)
        #expect(rebuild.status == 0, "report rebuild as the runtime role: \(rebuild.errors)")
        let after = try analyses()
        #expect(after.count == tables.count)
        for table in tables {
            #expect((after[table] ?? 0) > (before[table] ?? 0), "report rebuild did not analyse \(table)")
        }
        let runtime = try Connection(url: roles.pipelineURL)
        defer { runtime.close() }
        _ = try runtime.query("SELECT rebuild_rollups()")
        let warnings = runtime.takeWarnings()
        #expect(warnings.isEmpty, "rebuild_rollups() as the runtime role: \(warnings)")
    }
}

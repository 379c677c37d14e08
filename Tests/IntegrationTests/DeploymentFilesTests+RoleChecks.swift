import Foundation
import Postgres
import TestSupport
import Testing

// What DeploymentFilesTests+Roles checks of a deployment's database: its grants, the connections
// refused, the analyst's login, who owns what, and the statements the runtime role is refused.

extension DeploymentFilesTests {
    /// CONNECT and TEMPORARY on the database are the deployment's two logins' alone (and its owner's,
    /// the superuser): not PUBLIC's, nor detour_writer's or detour_analyst's, group roles whose
    /// members may be another deployment's logins.
    func expectDatabaseGrants(_ roles: ComposeRoles) throws {
        let admin = try Connection(url: roles.superuserURL)
        defer { admin.close() }
        let grants = try admin.query(
            """
            SELECT coalesce(nullif(a.grantee, 0)::regrole::text, 'PUBLIC') || ' ' || a.privilege_type AS g
            FROM pg_database d CROSS JOIN LATERAL aclexplode(d.datacl) a
            WHERE d.datname = current_database() AND a.grantee <> d.datdba
            """
        ).map { try $0["g", as: String.self] }
        let expected = [roles.owner, roles.pipeline].flatMap { ["\($0) CONNECT", "\($0) TEMPORARY"] }
        #expect(grants.sorted() == expected.sorted())
    }

    /// Connecting to `url` is refused for want of CONNECT on `database` (SQLSTATE 42501, which libpq
    /// does not hand out for a refused connection: its message says it).
    func expectConnectRefused(_ url: String, database: String) {
        do throws(PostgresError) {
            let connection = try Connection(url: url)
            connection.close()
            Issue.record("connected to \(database) as another deployment's login")
        } catch {
            let refusal = #"permission denied for database "\#(database)""#
            #expect(error.description.contains(refusal), "\(error)")
        }
    }

    /// What docs/schema.md tells an operator to do for a person: a login in detour_analyst alone
    /// cannot connect (PUBLIC has no CONNECT); granted CONNECT on the database, it reads the reports.
    func expectAnalystLogin(_ roles: ComposeRoles) throws {
        var random = SystemRandomNumberGenerator()
        let analyst = "detour_analyst_" + String(random.next() as UInt64, radix: 16)
        let password = String(random.next() as UInt64, radix: 16)
        let admin = try Connection(url: roles.superuserURL)
        defer { admin.close() }
        // Hex names and password: nothing to quote (CREATE ROLE takes no parameters).
        try admin.unsafeSQL("CREATE ROLE \(analyst) LOGIN PASSWORD '\(password)' IN ROLE detour_analyst")
        defer { try? admin.unsafeSQL("DROP OWNED BY \(analyst); DROP ROLE \(analyst)") }
        let url = roles.url(user: analyst, password: password)
        expectConnectRefused(url, database: roles.database)
        // The script names such a login (an upgrade revokes PUBLIC's CONNECT its analysts relied on).
        let named = try roles.runInitScript()
        #expect(named.status == 0, "\(named.output)")
        #expect(named.output.contains("logins in detour_analyst without CONNECT"), "\(named.output)")
        #expect(named.output.contains(analyst), "\(named.output)")
        try admin.execute(
            "GRANT CONNECT ON DATABASE \(identifier: roles.database) TO \(identifier: analyst)")
        // Granted, it is not named again.
        let granted = try roles.runInitScript()
        #expect(granted.status == 0 && !granted.output.contains(analyst), "\(granted.output)")
        let connection = try Connection(url: url)
        defer { connection.close() }
        let rows = try connection.query("SELECT count(*) AS n FROM report_link_daily").first?["n", as: Int.self]
        #expect((rows ?? 0) > 0)
    }

    /// Everything in the schema belongs to the owner: what the migrations made, and the day
    /// partitions the pipeline had ensure_day_partitions create (it runs as its owner).
    func expectNothingOwnedByOthers(_ roles: ComposeRoles) throws {
        let admin = try Connection(url: roles.superuserURL)
        defer { admin.close() }
        let others = try admin.query(
            """
            SELECT kind || ' ' || name || ' (' || pg_get_userbyid(owner) || ')' AS object FROM (
                SELECT 'relation' AS kind, c.relname::text AS name, c.relowner AS owner FROM pg_class c
                WHERE c.relnamespace = 'public'::regnamespace
                UNION ALL
                SELECT 'function', p.proname::text, p.proowner FROM pg_proc p WHERE p.pronamespace = 'public'::regnamespace
                UNION ALL
                SELECT 'type', t.typname::text, t.typowner FROM pg_type t WHERE t.typnamespace = 'public'::regnamespace
                UNION ALL
                SELECT 'schema', n.nspname::text, n.nspowner FROM pg_namespace n WHERE n.nspname = 'public'
            ) o
            WHERE o.owner <> \(roles.owner)::regrole
            ORDER BY 1
            """
        ).map { try $0["object", as: String.self] }
        #expect(others.isEmpty, "owned by another role than \(roles.owner): \(others.prefix(10))")
    }

    /// What neither role may do: the runtime role no DDL, no writes to keys, apps or raw rows, no
    /// superuser catalogs or files, no becoming the owner; the owner is no superuser either.
    func expectRefusals(_ roles: ComposeRoles) throws {
        let pipeline = try Connection(url: roles.pipelineURL)
        defer { pipeline.close() }
        let attributes = try pipeline.query(
            """
            SELECT r.rolsuper OR r.rolcreaterole OR r.rolcreatedb OR r.rolbypassrls AS mighty,
                   pg_has_role(current_user, \(roles.owner)::name, 'MEMBER') AS owner
            FROM pg_roles r WHERE r.rolname = current_user
            """)
        #expect(try attributes.first?["mighty", as: Bool.self] == false)
        #expect(try attributes.first?["owner", as: Bool.self] == false)
        let refused = [
            "CREATE TABLE roles_probe (a int)",
            "CREATE SCHEMA roles_probe",
            "CREATE FUNCTION roles_probe() RETURNS int LANGUAGE sql AS 'SELECT 1'",
            "DROP TABLE events",
            "ALTER TABLE events ADD COLUMN probe int",
            "TRUNCATE rollup_devices",
            "DELETE FROM events",
            "UPDATE clicks SET path = '/'",
            "SELECT count(*) FROM events_default",
            "UPDATE apps SET name = 'taken'",
            "INSERT INTO api_keys (app_id, key_hash, kind, prefix) VALUES ('roles-app', repeat('a', 64), 'secret', 'sk_x')",
            "DELETE FROM api_keys",
            "INSERT INTO funnels (app_id, funnel_id, name, steps) VALUES ('roles-app', 'f', 'f', ARRAY['install', 'x'])",
            "SELECT count(*) FROM schema_migrations",
            "SELECT rolpassword FROM pg_authid",
            "COPY events TO '/tmp/roles-probe'",
            "SET ROLE \"\(roles.owner)\"",
            "ALTER FUNCTION ensure_day_partitions(regclass, date, date) SECURITY INVOKER",
        ]
        for sql in refused {
            #expect(sqlState(pipeline, sql) == "42501", "the runtime role may run: \(sql)")
        }

        let owner = try Connection(url: roles.ownerURL)
        defer { owner.close() }
        #expect(
            try owner.query("SELECT rolsuper FROM pg_roles WHERE rolname = current_user").first?[0, as: Bool.self]
                == false)
        for sql in ["CREATE ROLE roles_probe", "SELECT rolpassword FROM pg_authid", "CREATE DATABASE roles_probe"] {
            #expect(sqlState(owner, sql) == "42501", "the owner may run: \(sql)")
        }
    }

    /// The SQLSTATE `sql` fails with, or nil when it succeeds.
    func sqlState(_ connection: Connection, _ sql: String) -> String? {
        do throws(PostgresError) {
            try connection.unsafeSQL(sql)
            return nil
        } catch {
            return error.sqlState ?? error.description
        }
    }
}
